//! A model test: random sequences of requests (in several runs), signals (on any pending gate,
//! `/revoke-all` included) and clock moves, compared with a small oracle of the contract. Checks
//! after every step that the pending gates (one per run), the runs and the decisions agree, that nothing is approved after its expiry, and that the log chain holds.

use std::collections::HashMap;

use proptest::prelude::*;
use squad_model::ChannelKind;
use squad_notify::*;

use crate::common::*;

#[derive(Debug, Clone, Copy)]
enum Who {
    Approver,
    Stranger,
    Bot,
    SelfId,
    Chat,
}

#[derive(Debug, Clone, Copy)]
enum Cmd {
    Approve,
    ApproveAll,
    Changes,
    Stop,
    RevokeAll,
    Noise,
    Empty,
}

#[derive(Debug, Clone, Copy)]
enum Bind {
    Unbound,
    Right,
    Wrong,
}

#[derive(Debug, Clone)]
enum Op {
    Request {
        mode: usize,
        trigger: usize,
        run: Option<u8>,
        ttl: u16,
    },
    Signal {
        who: Who,
        cmd: Cmd,
        bind: Bind,
        pick: u8,
    },
    Advance(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..3usize, 0..9usize, prop::option::of(0..3u8), 1..600u16)
            .prop_map(|(mode, trigger, run, ttl)| Op::Request { mode, trigger, run, ttl }),
        4 => (
            prop::sample::select(vec![Who::Approver, Who::Stranger, Who::Bot, Who::SelfId, Who::Chat]),
            prop::sample::select(vec![Cmd::Approve, Cmd::ApproveAll, Cmd::Changes, Cmd::Stop, Cmd::RevokeAll, Cmd::Noise, Cmd::Empty]),
            prop::sample::select(vec![Bind::Unbound, Bind::Right, Bind::Wrong]),
            any::<u8>(),
        )
            .prop_map(|(who, cmd, bind, pick)| Op::Signal { who, cmd, bind, pick }),
        1 => (0..400u16).prop_map(Op::Advance),
    ]
}

#[derive(Debug, Default, Clone)]
struct RunModel {
    stopped: bool,
    approve_all: bool,
}

#[derive(Debug, Default)]
struct Model {
    /// The pending gate of each run: id, trigger, expiry.
    pending: HashMap<RunId, (GateId, Trigger, squad_model::Timestamp)>,
    current: Option<RunId>,
    runs: HashMap<RunId, RunModel>,
}

fn text(cmd: Cmd, bind: Bind, id: &GateId) -> String {
    let suffix = match bind {
        Bind::Unbound => String::new(),
        Bind::Right => format!(" {id}"),
        Bind::Wrong => " g-ffffffffffff".to_owned(),
    };
    match cmd {
        Cmd::Approve => format!("/approve{suffix}"),
        Cmd::ApproveAll => format!("/approve-all{suffix}"),
        Cmd::Changes => format!("/changes{suffix}: redo"),
        Cmd::Stop => format!("/stop{suffix}"),
        Cmd::RevokeAll => format!("/revoke-all{suffix}"),
        Cmd::Noise => "> /approve\nLGTM".to_owned(),
        Cmd::Empty => String::new(),
    }
}

async fn run_ops(ops: Vec<Op>) {
    let e = env();
    let policy = GatePolicy::standard();
    let mut m = Model::default();
    for op in ops {
        let now = e.clock.now();
        match op {
            Op::Request {
                mode,
                trigger,
                run,
                ttl,
            } => {
                let (mode, trigger) = (Mode::ALL[mode], Trigger::ALL[trigger]);
                let run = run.map(|r| RunId::new(&format!("run-{r}")).unwrap());
                let got = e
                    .approvals
                    .request(
                        &request(mode, trigger),
                        run.clone(),
                        u64::from(ttl),
                        &e.channels,
                    )
                    .await;
                if let PolicyDecision::NoGate(_) = policy.decide(mode, trigger) {
                    assert!(matches!(got, Ok(RequestOutcome::NoGate { .. })), "{got:?}");
                    continue;
                }
                let run_id = run.or_else(|| m.current.clone());
                if run_id
                    .as_ref()
                    .and_then(|r| m.pending.get(r))
                    .is_some_and(|p| now < p.2)
                {
                    assert_eq!(got.unwrap_err().kind(), ErrorKind::Conflict);
                    continue;
                }
                if run_id
                    .as_ref()
                    .is_some_and(|r| m.runs.get(r).is_some_and(|r| r.stopped))
                {
                    assert_eq!(got.unwrap_err().kind(), ErrorKind::Conflict);
                    continue;
                }
                // Every pending gate past its expiry was expired on the way.
                m.pending.retain(|_, p| now < p.2);
                match got.unwrap() {
                    RequestOutcome::PreApproved(g) => {
                        assert_eq!(trigger, Trigger::ImpactfulAction);
                        assert!(m.runs[&g.run].approve_all);
                        m.current = Some(g.run);
                    }
                    RequestOutcome::Opened { gate, .. } => {
                        let covered = m.runs.get(&gate.run).is_some_and(|r| r.approve_all);
                        assert!(
                            !(covered && trigger == Trigger::ImpactfulAction),
                            "should have been pre-approved"
                        );
                        if let Some(r) = &run_id {
                            assert_eq!(&gate.run, r);
                        }
                        m.runs.entry(gate.run.clone()).or_default();
                        m.current = Some(gate.run.clone());
                        m.pending.insert(gate.run, (gate.id, trigger, gate.expires));
                    }
                    RequestOutcome::NoGate { .. } => panic!("policy pings"),
                }
            }
            Op::Signal {
                who,
                cmd,
                bind,
                pick,
            } => {
                let mut runs: Vec<&RunId> = m.pending.keys().collect();
                runs.sort();
                let target =
                    (!runs.is_empty()).then(|| runs[usize::from(pick) % runs.len()].clone());
                let id = target.as_ref().map_or_else(
                    || GateId::new("g-000000000000").unwrap(),
                    |r| m.pending[r].0.clone(),
                );
                let body = text(cmd, bind, &id);
                let mut s = match who {
                    Who::Approver => gh("octocat", 583231, &body),
                    Who::Stranger => gh("mallory", 666, &body),
                    Who::Bot => signal("ci[bot]", Some(5), true, ChannelKind::GithubIssue, &body),
                    Who::SelfId => gh("squad-bot-account", 777, &body),
                    Who::Chat => signal("in-chat", None, false, ChannelKind::InChat, &body),
                };
                s.at = now;
                let Some(run) = target else {
                    let got = e
                        .approvals
                        .consume(&[s], &rules(), &StaticAuthorizer::new())
                        .await;
                    assert_eq!(got.unwrap_err().kind(), ErrorKind::NotFound);
                    continue;
                };
                let (pid, _trigger, expires) = m.pending[&run].clone();
                let got = e
                    .approvals
                    .consume_gate(&pid, &[s], &rules(), &StaticAuthorizer::new())
                    .await
                    .unwrap();
                if now >= expires {
                    assert_eq!(got.decided.unwrap().state, GateState::Expired);
                    m.pending.remove(&run);
                    continue;
                }
                let counts = matches!(who, Who::Approver | Who::Chat)
                    && !matches!(bind, Bind::Wrong)
                    && !matches!(cmd, Cmd::Noise | Cmd::Empty);
                if !counts {
                    assert!(got.decided.is_none(), "{who:?} {cmd:?} {bind:?}");
                    continue;
                }
                if matches!(cmd, Cmd::RevokeAll) {
                    assert!(got.decided.is_none(), "/revoke-all decides nothing");
                    m.runs.get_mut(&run).unwrap().approve_all = false;
                    continue;
                }
                let g = got.decided.unwrap();
                assert_eq!(g.id, pid);
                let want = match cmd {
                    Cmd::Approve => GateState::Approved,
                    Cmd::ApproveAll => GateState::ApproveAll,
                    Cmd::Changes => GateState::ChangesRequested,
                    Cmd::Stop => GateState::Stopped,
                    Cmd::RevokeAll | Cmd::Noise | Cmd::Empty => unreachable!(),
                };
                assert_eq!(g.state, want);
                let r = m.runs.get_mut(&run).unwrap();
                r.approve_all |= want == GateState::ApproveAll;
                r.stopped |= want == GateState::Stopped;
                m.pending.remove(&run);
            }
            Op::Advance(s) => e.clock.advance_seconds(i64::from(s)),
        }
        // After every step: the file agrees with the model, and no rule is broken.
        let st = e.approvals.state().unwrap();
        let a = &st.approval;
        let mut file_pending: Vec<(RunId, GateId)> = a
            .pending_gates
            .iter()
            .map(|g| (g.run.clone(), g.id.clone()))
            .collect();
        file_pending.sort();
        let mut model_pending: Vec<(RunId, GateId)> = m
            .pending
            .iter()
            .map(|(r, p)| (r.clone(), p.0.clone()))
            .collect();
        model_pending.sort();
        assert_eq!(file_pending, model_pending);
        for (run, r) in &m.runs {
            assert_eq!(
                a.run(run).unwrap().approve_all.is_some(),
                r.approve_all,
                "{run}"
            );
        }
        for g in &a.recent {
            if let Some(d) = &g.decision {
                assert!(
                    !(g.state.proceeds() && d.at >= g.expires),
                    "approved after expiry: {g:?}"
                );
                assert!(
                    !(g.trigger == Trigger::RiskGate && d.pre_approved),
                    "risk gate pre-approved"
                );
            }
        }
        if let Ok(log) = std::fs::read_to_string(e.approvals.dir().log_path()) {
            verify_log(&log, a.log_head.as_deref()).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_runs_follow_the_contract(ops in prop::collection::vec(op(), 1..18)) {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(run_ops(ops));
    }
}
