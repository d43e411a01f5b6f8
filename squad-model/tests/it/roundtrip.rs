//! Every model type survives a serde round trip (proptest over generated values).

use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use squad_model::*;

fn roundtrip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(v: &T) {
    let text = serde_json::to_string(v).unwrap();
    let back: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(&back, v, "{text}");
}

fn ts() -> impl Strategy<Value = Timestamp> {
    (0i64..4_102_444_800_000).prop_map(|ms| Timestamp::from_unix_millis(ms).unwrap())
}
fn opt<T: std::fmt::Debug + Clone + 'static>(
    s: impl Strategy<Value = T> + 'static,
) -> impl Strategy<Value = Option<T>> {
    proptest::option::of(s)
}
fn ident() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_-]{1,12}"
}
fn text() -> impl Strategy<Value = String> {
    any::<String>()
}
fn user() -> impl Strategy<Value = UserId> {
    ident().prop_map(|s| UserId::new(s).unwrap())
}
fn agent_id() -> impl Strategy<Value = AgentId> {
    ident().prop_map(|s| AgentId::new(s).unwrap())
}
fn squad_id() -> impl Strategy<Value = SquadId> {
    ident().prop_map(|s| SquadId::new(s).unwrap())
}
fn issue_id() -> impl Strategy<Value = IssueId> {
    ident().prop_map(|s| IssueId::new(s).unwrap())
}
fn ws() -> impl Strategy<Value = WorkspaceId> {
    ident().prop_map(|s| WorkspaceId::new(s).unwrap())
}
fn agent_name() -> impl Strategy<Value = AgentName> {
    "[a-z0-9_-]{1,64}".prop_map(|s| AgentName::new(s).unwrap())
}
fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        text().prop_map(Value::String),
    ]
}
fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
fn extra() -> impl Strategy<Value = Map<String, Value>> {
    // Unknown keys: any name that is not one of the typed fields.
    proptest::collection::btree_map("x_[a-z]{1,8}", json_value(), 0..4)
        .prop_map(|m| m.into_iter().collect())
}

fn note_entry() -> impl Strategy<Value = NoteEntry> {
    (
        (
            agent_name(),
            ts(),
            proptest::sample::select(NoteType::ALL.to_vec()),
        ),
        (
            opt(text()),
            opt(text()),
            opt(text()),
            opt(proptest::collection::vec(text(), 0..3)),
        ),
        (
            opt(prop_oneof![
                Just(Confidence::Low),
                Just(Confidence::Medium),
                Just(Confidence::High)
            ]),
            opt(any::<bool>()),
            opt(text()),
            opt(json_value().prop_filter("null findings read back as absent", |v| !v.is_null())),
        ),
        (
            opt((0u32..100_000).prop_map(|q| f64::from(q) / 4.0)),
            opt(any::<bool>()),
            extra(),
        ),
    )
        .prop_map(
            |(
                (agent, t, kind),
                (content, decision, reasoning, alts),
                (conf, promote, topic, findings),
                (effort, archive, extra),
            )| {
                let mut e = NoteEntry::with_id(EntryId::generate(), agent, t, kind);
                e.content = content;
                e.decision = decision;
                e.reasoning = reasoning;
                e.alternatives_considered = alts;
                e.confidence = conf;
                e.promote_to_permanent = promote;
                e.topic = topic;
                e.findings = findings;
                e.effort_hours = effort;
                e.archive_on_close = archive;
                e.extra = extra;
                e
            },
        )
}

fn squad() -> impl Strategy<Value = Squad> {
    (
        (squad_id(), ws(), text(), text(), agent_id(), user()),
        (text(), opt(text()), opt(ts()), opt(user()), ts(), ts()),
    )
        .prop_map(
            |(
                (id, workspace_id, name, description, leader_id, creator_id),
                (instructions, avatar_url, archived_at, archived_by, created_at, updated_at),
            )| Squad {
                id,
                workspace_id,
                name,
                description,
                leader_id,
                creator_id,
                instructions,
                avatar_url,
                archived_at,
                archived_by,
                created_at,
                updated_at,
            },
        )
}

fn member() -> impl Strategy<Value = SquadMember> {
    (
        ident(),
        squad_id(),
        prop_oneof![
            agent_id().prop_map(MemberRef::Agent),
            user().prop_map(MemberRef::Member)
        ],
        text(),
        ts(),
    )
        .prop_map(|(id, squad_id, member, role, created_at)| SquadMember {
            id: SquadMemberId::new(id).unwrap(),
            squad_id,
            member,
            role,
            created_at,
        })
}

fn agent() -> impl Strategy<Value = Agent> {
    let runtime =
        (ident(), any::<bool>(), opt(ts())).prop_map(|(id, online, last_seen_at)| RuntimeBinding {
            runtime_id: RuntimeId::new(id).unwrap(),
            status: if online {
                RuntimeStatus::Online
            } else {
                RuntimeStatus::Offline
            },
            last_seen_at,
        });
    let target = prop_oneof![
        Just(InvocationTarget::Workspace),
        user().prop_map(InvocationTarget::Member),
        ident().prop_map(InvocationTarget::Team),
    ];
    (
        (agent_id(), ws(), text(), opt(user()), opt(ts())),
        (
            opt(runtime),
            any::<bool>(),
            proptest::collection::vec(target, 0..3),
            proptest::collection::vec(text(), 0..3),
            ts(),
        ),
    )
        .prop_map(
            |(
                (id, workspace_id, name, owner_id, archived_at),
                (runtime, public, invocation_targets, skills, created_at),
            )| Agent {
                id,
                workspace_id,
                name,
                owner_id,
                archived_at,
                runtime,
                permission_mode: if public {
                    PermissionMode::PublicTo
                } else {
                    PermissionMode::Private
                },
                invocation_targets,
                skills,
                instructions: String::new(),
                created_at,
            },
        )
}

fn issue() -> impl Strategy<Value = Issue> {
    let status = proptest::sample::select(vec![
        IssueStatus::Backlog,
        IssueStatus::Todo,
        IssueStatus::InProgress,
        IssueStatus::InReview,
        IssueStatus::Done,
        IssueStatus::Blocked,
        IssueStatus::Cancelled,
    ]);
    let assignee = prop_oneof![
        user().prop_map(Assignee::Member),
        agent_id().prop_map(Assignee::Agent),
        squad_id().prop_map(Assignee::Squad),
    ];
    let origin = (ident(), opt(ident())).prop_map(|(kind, id)| Origin { kind, id });
    let actor = prop_oneof![
        user().prop_map(Actor::Member),
        agent_id().prop_map(Actor::Agent)
    ];
    (
        (issue_id(), ws(), text(), status, opt(assignee)),
        (
            opt(issue_id()),
            opt(1u32..10),
            opt(origin),
            opt(actor),
            ts(),
        ),
    )
        .prop_map(
            |(
                (id, workspace_id, title, status, assignee),
                (parent_issue_id, stage, origin, creator, created_at),
            )| Issue {
                id,
                workspace_id,
                title,
                status,
                assignee,
                parent_issue_id,
                stage,
                origin,
                creator,
                created_at,
            },
        )
}

fn task() -> impl Strategy<Value = Task> {
    let status = proptest::sample::select(vec![
        TaskStatus::Queued,
        TaskStatus::Dispatched,
        TaskStatus::Running,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
        TaskStatus::WaitingLocalDirectory,
        TaskStatus::Deferred,
    ]);
    (
        (
            ident(),
            agent_id(),
            opt(issue_id()),
            status,
            any::<bool>(),
            opt(squad_id()),
        ),
        (
            opt(ident()),
            opt(user()),
            opt("[0-9a-f]{40}"),
            1u32..5,
            ts(),
        ),
    )
        .prop_map(
            |(
                (id, agent_id, issue_id, status, is_leader_task, squad_id),
                (comment, originator_user_id, head_sha, attempt, created_at),
            )| Task {
                id: TaskId::new(id).unwrap(),
                agent_id,
                issue_id,
                status,
                is_leader_task,
                squad_id,
                trigger_comment_id: comment.map(|c| CommentId::new(c).unwrap()),
                originator_user_id,
                head_sha,
                context: None,
                attempt,
                created_at,
            },
        )
}

fn autopilot() -> impl Strategy<Value = Autopilot> {
    (
        ident(),
        ws(),
        text(),
        prop_oneof![
            agent_id().prop_map(Assignee::Agent),
            squad_id().prop_map(Assignee::Squad)
        ],
        any::<bool>(),
        any::<bool>(),
        opt(text()),
        user(),
        opt(agent_id()),
        any::<bool>(),
    )
        .prop_map(
            |(
                id,
                workspace_id,
                title,
                assignee,
                create,
                active,
                pause_reason,
                creator_id,
                agent_creator,
                assigned,
            )| {
                Autopilot {
                    id: AutopilotId::new(id).unwrap(),
                    workspace_id,
                    title,
                    assignee: assigned.then_some(assignee),
                    execution_mode: if create {
                        ExecutionMode::CreateIssue
                    } else {
                        ExecutionMode::RunOnly
                    },
                    status: if active {
                        AutopilotStatus::Active
                    } else {
                        AutopilotStatus::Paused
                    },
                    pause_reason,
                    creator: agent_creator.map_or(Actor::Member(creator_id), Actor::Agent),
                }
            },
        )
}

fn notify() -> impl Strategy<Value = NotifySettings> {
    (
        proptest::sample::select(vec![
            ChannelKind::GithubIssue,
            ChannelKind::Webhook,
            ChannelKind::InChat,
        ]),
        any::<bool>(),
        prop_oneof![Just(String::new()), "[a-z]{1,8}@[a-z]{1,8}\\.org"],
        opt(("[A-Za-z0-9]{1,20}", "[a-z]{1,8}/[a-z]{1,8}")),
        extra(),
    )
        .prop_map(
            |(approval_channel, enabled, email, gh, extra)| NotifySettings {
                approval_channel,
                enabled,
                email,
                github: gh.map(|(handle, repo)| GithubTarget {
                    handle,
                    repo,
                    extra: Map::new(),
                }),
                extra,
                ..NotifySettings::default()
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn note_entries_roundtrip(e in note_entry()) {
        roundtrip(&e);
        // Through the wire line and the schema-validating reader too.
        let line = e.to_line();
        prop_assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
        prop_assert_eq!(NoteEntry::from_json(&line).unwrap(), e);
    }

    #[test]
    fn squads_roundtrip(s in squad()) { roundtrip(&s); }

    #[test]
    fn members_roundtrip(m in member()) { roundtrip(&m); }

    #[test]
    fn agents_roundtrip(a in agent()) { roundtrip(&a); }

    #[test]
    fn issues_roundtrip(i in issue()) { roundtrip(&i); }

    #[test]
    fn tasks_roundtrip(t in task()) { roundtrip(&t); }

    #[test]
    fn autopilots_roundtrip(a in autopilot()) { roundtrip(&a); }

    #[test]
    fn notify_roundtrips_and_validates(n in notify()) {
        roundtrip(&n);
        prop_assert_eq!(NotifySettings::from_value(n.to_value()).unwrap(), n);
    }

    #[test]
    fn names_and_ids_roundtrip(name in agent_name(), t in ts()) {
        roundtrip(&name);
        roundtrip(&t);
        roundtrip(&EntryId::generate());
    }
}

#[test]
fn unknown_fields_survive_in_order() {
    let text = r#"{"id":"01ARZ3NDEKTSV4RRFFQ69G5FAV","agent":"data","timestamp":"2026-03-23T14:00:00Z","type":"progress","zeta":1,"content":"x","alpha":{"nested":[1,2]}}"#;
    let e = NoteEntry::from_json(text).unwrap();
    assert_eq!(e.extra.keys().collect::<Vec<_>>(), ["zeta", "alpha"]);
    let back = e.to_value();
    assert_eq!(back["alpha"]["nested"][1], 2);
    assert_eq!(back["zeta"], 1);
}

#[test]
fn wire_shapes_match_the_reference() {
    let m: SquadMember = serde_json::from_value(json!({
        "id": "m1", "squad_id": "s1", "member_type": "agent", "member_id": "a1", "created_at": "2026-01-01T00:00:00Z"
    })).unwrap();
    assert_eq!(m.member, MemberRef::Agent(AgentId::new("a1").unwrap()));
    assert_eq!(m.role, "", "role defaults to empty");

    let a: Agent = serde_json::from_value(json!({
        "id": "a1", "workspace_id": "w", "name": "Lead", "created_at": "2026-01-01T00:00:00Z"
    }))
    .unwrap();
    assert_eq!(
        a.permission_mode,
        PermissionMode::Private,
        "agents are private by default"
    );

    let i: Issue = serde_json::from_value(json!({
        "id": "i1", "workspace_id": "w", "assignee_type": "squad", "assignee_id": "s1", "created_at": "2026-01-01T00:00:00Z"
    })).unwrap();
    assert_eq!(
        i.assignee,
        Some(Assignee::Squad(SquadId::new("s1").unwrap()))
    );
    assert_eq!(i.status, IssueStatus::Backlog, "storage default");
    assert!(TaskStatus::Queued.is_pending() && TaskStatus::Dispatched.is_pending());
    assert!(!TaskStatus::Running.is_pending(), "running is not pending");
    assert!(IssueStatus::Done.is_terminal() && IssueStatus::Cancelled.is_terminal());
}

/// Autopilots written before agents could create them (`creator_id` alone, always an assignee)
/// still read, as member-created; an agent creator is named by `creator_type`.
#[test]
fn autopilot_creator_wire_forms() {
    let old = json!({"id": "ap1", "workspace_id": "w1", "assignee_type": "squad",
        "assignee_id": "s1", "execution_mode": "run_only", "creator_id": "u1"});
    let a: Autopilot = serde_json::from_value(old.clone()).unwrap();
    assert_eq!(a.creator, Actor::Member(UserId::new("u1").unwrap()));
    assert_eq!(
        a.assignee,
        Some(Assignee::Squad(SquadId::new("s1").unwrap()))
    );
    let mut v = serde_json::to_value(&a).unwrap();
    v.as_object_mut().unwrap().remove("status");
    v.as_object_mut().unwrap().remove("title");
    assert_eq!(v, old);
    let by_agent = json!({"id": "ap2", "workspace_id": "w1", "execution_mode": "create_issue",
        "creator_type": "agent", "creator_id": "a1"});
    let a: Autopilot = serde_json::from_value(by_agent).unwrap();
    assert_eq!(a.creator, Actor::Agent(AgentId::new("a1").unwrap()));
    assert_eq!(a.assignee, None);
    for bad in [
        json!({"id": "ap3", "workspace_id": "w1", "execution_mode": "run_only"}),
        json!({"id": "ap3", "workspace_id": "w1", "execution_mode": "run_only",
            "creator_type": "robot", "creator_id": "x"}),
        json!({"id": "ap3", "workspace_id": "w1", "execution_mode": "run_only",
            "creator_id": "has space"}),
    ] {
        assert!(
            serde_json::from_value::<Autopilot>(bad.clone()).is_err(),
            "{bad}"
        );
    }
}
