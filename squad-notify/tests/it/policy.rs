//! The gate policy, exhaustively: every mode x trigger.

use squad_notify::{GatePolicy, Mode, PolicyDecision, Trigger};

#[test]
fn every_mode_and_trigger_follows_the_contract_table() {
    use Mode::*;
    use Trigger::*;
    // (trigger, autopilot, interactive, autonomous)
    let table = [
        (FinalOutcome, true, false, false),
        (ImpactfulAction, true, false, false),
        (RiskGate, true, true, true),
        (StepResearch, false, true, false),
        (StepPlan, false, true, false),
        (StepCouncil, false, true, false),
        (StepImplement, false, true, false),
        (StepReview, false, true, false),
        (Escalation, false, false, true),
    ];
    assert_eq!(
        table.len(),
        Trigger::ALL.len(),
        "the table covers every trigger"
    );
    let p = GatePolicy::standard();
    let mut checked = 0;
    for (trigger, ap, ia, an) in table {
        for (mode, pings) in [(Autopilot, ap), (Interactive, ia), (Autonomous, an)] {
            let got = p.decide(mode, trigger);
            match (pings, got) {
                (true, PolicyDecision::Ping) => {}
                (false, PolicyDecision::NoGate(reason)) => {
                    assert!(reason.contains(mode.as_str()), "{mode}/{trigger}: {reason}");
                }
                _ => panic!("{mode} x {trigger}: expected ping={pings}, got {got:?}"),
            }
            checked += 1;
        }
    }
    assert_eq!(checked, Mode::ALL.len() * Trigger::ALL.len());
}

#[test]
fn approve_all_covers_impactful_actions_only_never_a_risk_gate() {
    let p = GatePolicy::standard();
    for t in Trigger::ALL {
        assert_eq!(
            p.covered_by_approve_all(t),
            t == Trigger::ImpactfulAction,
            "{t}"
        );
    }
}

#[test]
fn wire_names_round_trip_and_unknown_names_are_refused() {
    for m in Mode::ALL {
        assert_eq!(m.as_str().parse::<Mode>().unwrap(), m);
        assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
    }
    for t in Trigger::ALL {
        assert_eq!(t.as_str().parse::<Trigger>().unwrap(), t);
        assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
    }
    for bad in ["", "Autopilot", "auto", "step:deploy", "risk_gate", "step"] {
        let m = bad.parse::<Mode>();
        let t = bad.parse::<Trigger>();
        assert!(m.is_err() && t.is_err(), "{bad:?}");
        assert!(t.unwrap_err().to_string().contains("unknown trigger"));
    }
}
