//! `squad route simulate` and the workloads of `squad route generate`.

use std::path::Path;

use crate::route::run;

fn ok(args: &[&str], stdin: Option<&str>, dir: &Path) -> String {
    let out = run(args, stdin, dir);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Exit 2 with one `error:` line (and at most a hint), nothing on stdout; returns stderr.
fn usage_error(args: &[&str], stdin: Option<&str>, dir: &Path) -> String {
    let out = run(args, stdin, dir);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    assert!(err.lines().count() <= 2, "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}");
    err
}

/// A directory with a review-storm trace and two policies: the default and a leader barrier.
fn storm() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let trace = ok(
        &[
            "route",
            "generate",
            "--workload",
            "review-storm",
            "--squads",
            "4",
            "--events",
            "400",
            "--seed",
            "3",
        ],
        None,
        dir.path(),
    );
    std::fs::write(dir.path().join("storm.jsonl"), trace).unwrap();
    std::fs::write(dir.path().join("default.json"), "{}").unwrap();
    std::fs::write(
        dir.path().join("barrier.json"),
        r#"{"leader_barrier_seconds": 60}"#,
    )
    .unwrap();
    dir
}

const PAIR: [&str; 6] = [
    "route",
    "simulate",
    "--policy",
    "default.json",
    "--policy",
    "barrier.json",
];

fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<&str> = PAIR.to_vec();
    v.extend_from_slice(extra);
    v
}

#[test]
fn json_has_one_entry_per_policy_named_by_its_file_with_every_metric() {
    let dir = storm();
    let text = ok(&with(&["storm.jsonl", "--json"]), None, dir.path());
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let policies = v["policies"].as_array().unwrap();
    assert_eq!(policies.len(), 2);
    assert_eq!(policies[0]["name"], "default");
    assert_eq!(policies[1]["name"], "barrier");
    assert_eq!(policies[0]["counterfactual"], false);
    assert_eq!(policies[1]["counterfactual"], true);
    for p in policies {
        let m = &p["metrics"];
        for key in [
            "enqueued",
            "enqueued_leader",
            "coalesced",
            "escalations_scheduled",
            "escalations_fired",
            "redundant_wakes",
            "wakes_after_end",
            "cost",
        ] {
            assert!(m[key].is_number(), "{key}: {m}");
        }
        assert!(m["cancelled"].is_object());
        assert!(m["rejections"].is_object());
        assert!(m["loops"].is_array());
        for k in ["p50", "p95", "max"] {
            assert!(m["time_to_first_wake"].get(k).is_some(), "{k}");
        }
    }
    // The barrier wakes the leader less often.
    let leader = |i: usize| policies[i]["metrics"]["enqueued_leader"].as_u64().unwrap();
    assert!(leader(1) < leader(0), "{text}");
    // No --diff, no differences listed.
    assert_eq!(v["diff"], serde_json::json!([]));
    // stdin works as the trace.
    let trace = std::fs::read_to_string(dir.path().join("storm.jsonl")).unwrap();
    let again = ok(&with(&["-", "--json"]), Some(&trace), dir.path());
    assert_eq!(again, text);
}

#[test]
fn csv_is_one_row_per_policy_and_metric() {
    let dir = storm();
    let text = ok(&with(&["storm.jsonl", "--csv"]), None, dir.path());
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("policy,metric,value"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.iter().all(|r| r.len() == 3));
    let metrics =
        |p: &str| -> Vec<&str> { rows.iter().filter(|r| r[0] == p).map(|r| r[1]).collect() };
    assert_eq!(
        metrics("default"),
        metrics("barrier"),
        "the same rows for each policy"
    );
    for m in [
        "enqueued",
        "cancelled.reassigned",
        "rejections.403",
        "time_to_first_wake.p95",
        "loops",
        "cost",
    ] {
        assert!(metrics("default").contains(&m), "{m}");
    }
    let err = usage_error(&with(&["storm.jsonl", "--csv", "--json"]), None, dir.path());
    assert!(err.contains("--csv and --json"), "{err}");
}

#[test]
fn the_table_names_the_counterfactual_run_and_the_svg_charts_both_policies() {
    let dir = storm();
    let text = ok(
        &with(&["storm.jsonl", "--svg", "wakes.svg"]),
        None,
        dir.path(),
    );
    let head = text.lines().next().unwrap();
    assert!(head.starts_with("metric"), "{head}");
    assert!(
        head.contains("default") && head.contains("barrier*"),
        "{head}"
    );
    assert!(text.contains("* counterfactual"));
    assert!(text.lines().any(|l| l.starts_with("enqueued_leader ")));
    let svg = std::fs::read_to_string(dir.path().join("wakes.svg")).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains("Cumulative wakes over trace time"));
    assert!(svg.contains("default") && svg.contains("barrier (counterfactual)"));
    assert!(svg.trim_end().ends_with("</svg>"));
    // A chart into a directory that does not exist: exit 2, nothing written, nothing printed.
    let err = usage_error(
        &with(&["storm.jsonl", "--svg", "nope/wakes.svg"]),
        None,
        dir.path(),
    );
    assert!(err.contains("does not exist"), "{err}");
    assert!(!dir.path().join("nope").exists());
}

#[test]
fn diff_lists_the_first_differences_and_explain_tells_the_story_of_an_issue() {
    let dir = storm();
    let v: serde_json::Value = serde_json::from_str(&ok(
        &with(&["storm.jsonl", "--json", "--diff", "--diff-limit", "3"]),
        None,
        dir.path(),
    ))
    .unwrap();
    let diff = v["diff"].as_array().unwrap();
    assert_eq!(diff.len(), 3);
    assert_eq!(diff[0]["event"], "comment");
    let sides = diff[0]["policies"].as_array().unwrap();
    assert_eq!(sides[0]["name"], "default");
    let rules: Vec<&str> = sides[1]["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["rule"].as_str())
        .collect();
    assert_eq!(rules, ["leader_barrier"]);
    let text = ok(
        &with(&["storm.jsonl", "--diff", "--diff-limit", "2"]),
        None,
        dir.path(),
    );
    assert!(
        text.contains("First 2 events decided differently:"),
        "{text}"
    );
    assert!(text.contains("[leader_barrier]"), "{text}");
    // The story of the first parent: its creation, the reports, with the rules explained.
    let trace = std::fs::read_to_string(dir.path().join("storm.jsonl")).unwrap();
    let parent = trace
        .lines()
        .find(|l| l.contains(r#""type":"create_issue""#))
        .and_then(|l| l.split(r#""issue_id":""#).nth(1))
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();
    let text = ok(
        &with(&["storm.jsonl", "--explain", &parent]),
        None,
        dir.path(),
    );
    assert!(
        text.contains(&format!("The story of issue {parent} under default:")),
        "{text}"
    );
    assert!(text.contains(&format!("The story of issue {parent} under barrier:")));
    assert!(
        text.contains("comment_agent_author (§4.2 row 4, §4.3)"),
        "{text}"
    );
    assert!(
        text.contains("leader_barrier (leader_barrier_seconds)"),
        "{text}"
    );
    assert!(
        text.contains("scheduler"),
        "the barrier's task made due: {text}"
    );
    let err = usage_error(
        &with(&["storm.jsonl", "--explain", "no-such-issue"]),
        None,
        dir.path(),
    );
    assert!(err.contains("not in the trace"), "{err}");
    for bad in ["0", "10001", "-1"] {
        let err = usage_error(
            &with(&["storm.jsonl", "--diff", "--diff-limit", bad]),
            None,
            dir.path(),
        );
        assert!(err.contains("out of range (1 to 10000)"), "{err}");
    }
}

#[test]
fn loop_min_defaults_to_4_and_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let trace = ok(
        &[
            "route",
            "generate",
            "--workload",
            "chatter",
            "--squads",
            "2",
            "--events",
            "300",
            "--loop-percent",
            "100",
            "--max-rounds",
            "5",
        ],
        None,
        dir.path(),
    );
    std::fs::write(dir.path().join("chatter.jsonl"), &trace).unwrap();
    std::fs::write(dir.path().join("p.json"), "{}").unwrap();
    let loops = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "route",
            "simulate",
            "--policy",
            "p.json",
            "chatter.jsonl",
            "--json",
        ];
        args.extend_from_slice(extra);
        let v: serde_json::Value = serde_json::from_str(&ok(&args, None, dir.path())).unwrap();
        v["policies"][0]["metrics"].clone()
    };
    let m = loops(&[]);
    assert!(m["loop_count"].as_u64().unwrap() > 0, "{m}");
    let first = &m["loops"][0];
    assert_eq!(first["length"], 5);
    assert_eq!(first["agents"].as_array().unwrap().len(), 6);
    assert_eq!(loops(&["--loop-min", "4"]), m, "4 is the default");
    assert_eq!(loops(&["--loop-min", "6"])["loop_count"], 0);
    for bad in ["0", "1001", "-3", "x"] {
        let err = usage_error(
            &[
                "route",
                "simulate",
                "--policy",
                "p.json",
                "chatter.jsonl",
                "--loop-min",
                bad,
            ],
            None,
            dir.path(),
        );
        assert!(err.contains("--loop-min"), "{err}");
    }
}

#[test]
fn cost_uses_the_task_cost_and_the_agents_weights() {
    let dir = storm();
    let cost = |extra: &[&str]| -> f64 {
        let mut args = vec![
            "route",
            "simulate",
            "--policy",
            "default.json",
            "storm.jsonl",
            "--json",
        ];
        args.extend_from_slice(extra);
        let v: serde_json::Value = serde_json::from_str(&ok(&args, None, dir.path())).unwrap();
        v["policies"][0]["metrics"]["cost"].as_f64().unwrap()
    };
    let base = cost(&[]);
    assert!(base > 0.0);
    assert_eq!(cost(&["--task-cost", "2.5"]), base * 2.5);
    // Weigh every agent 0 but one: the cost is that agent's wakes.
    let trace = std::fs::read_to_string(dir.path().join("storm.jsonl")).unwrap();
    let agents: Vec<String> = trace
        .lines()
        .filter(|l| l.starts_with(r#"{"kind":"agent""#))
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["id"].as_str().unwrap().to_owned()
        })
        .collect();
    let zero: serde_json::Map<String, serde_json::Value> = agents
        .iter()
        .map(|a| (a.clone(), serde_json::json!(0)))
        .collect();
    std::fs::write(
        dir.path().join("w.json"),
        serde_json::to_string(&zero).unwrap(),
    )
    .unwrap();
    assert_eq!(cost(&["--weights", "w.json"]), 0.0);
    for (text, want) in [
        ("[]", "not a JSON object"),
        (r#"{"a1": -1}"#, "must be a number from 0 to 1000000"),
        (r#"{"a1": "x"}"#, "must be a number"),
        ("{", "invalid JSON"),
    ] {
        std::fs::write(dir.path().join("w.json"), text).unwrap();
        let err = usage_error(
            &[
                "route",
                "simulate",
                "--policy",
                "default.json",
                "storm.jsonl",
                "--weights",
                "w.json",
            ],
            None,
            dir.path(),
        );
        assert!(err.contains(want), "{text}: {err}");
    }
    for bad in ["-1", "nan", "1e9", "x"] {
        let err = usage_error(
            &[
                "route",
                "simulate",
                "--policy",
                "default.json",
                "storm.jsonl",
                "--task-cost",
                bad,
            ],
            None,
            dir.path(),
        );
        assert!(err.contains("--task-cost"), "{err}");
    }
}

#[test]
fn bad_policies_and_traces_are_refused_with_exit_2() {
    let dir = storm();
    std::fs::write(
        dir.path().join("typo.json"),
        r#"{"leader_barier_seconds": 60}"#,
    )
    .unwrap();
    let err = usage_error(
        &["route", "simulate", "--policy", "typo.json", "storm.jsonl"],
        None,
        dir.path(),
    );
    assert!(
        err.contains("unknown field `leader_barier_seconds`"),
        "{err}"
    );
    std::fs::create_dir(dir.path().join("other")).unwrap();
    std::fs::write(dir.path().join("other/default.json"), "{}").unwrap();
    let err = usage_error(
        &[
            "route",
            "simulate",
            "--policy",
            "default.json",
            "--policy",
            "other/default.json",
            "storm.jsonl",
        ],
        None,
        dir.path(),
    );
    assert!(err.contains("two policies are named 'default'"), "{err}");
    let err = usage_error(&["route", "simulate", "storm.jsonl"], None, dir.path());
    assert!(err.contains("--policy"), "{err}");
    let err = usage_error(&with(&["missing.jsonl"]), None, dir.path());
    assert!(err.contains("cannot open"), "{err}");
    let bad = r#"{"kind":"workspace","id":"w1"}
{"kind":"event","event":{"type":"claim","task_id":"nope"}}
"#;
    let err = usage_error(&with(&["-"]), Some(bad), dir.path());
    assert!(err.contains("line 2: unknown task \"nope\""), "{err}");
    let err = usage_error(&with(&["-"]), Some("{\n"), dir.path());
    assert!(err.contains("line 1: invalid JSON"), "{err}");
    let many: Vec<String> = (0..17).map(|i| format!("p{i}.json")).collect();
    let mut args = vec!["route", "simulate"];
    for m in &many {
        std::fs::write(dir.path().join(m), "{}").unwrap();
        args.push("--policy");
        args.push(m);
    }
    args.push("storm.jsonl");
    let err = usage_error(&args, None, dir.path());
    assert!(err.contains("more than the limit of 16"), "{err}");
    // A reference policy that is not one of the compared ones: every run is counterfactual.
    let v: serde_json::Value = serde_json::from_str(&ok(
        &[
            "route",
            "simulate",
            "--policy",
            "barrier.json",
            "--reference",
            "default.json",
            "storm.jsonl",
            "--json",
        ],
        None,
        dir.path(),
    ))
    .unwrap();
    assert_eq!(v["policies"][0]["counterfactual"], true);
    let help = ok(&["route", "simulate", "--help"], None, dir.path());
    assert!(
        help.contains("--loop-min") && help.contains("counterfactual"),
        "{help}"
    );
}

#[test]
fn each_workload_is_deterministic_and_its_knobs_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    for w in ["episodes", "steady", "review-storm", "chatter", "mentions"] {
        let args = [
            "route",
            "generate",
            "--workload",
            w,
            "--squads",
            "3",
            "--events",
            "200",
            "--seed",
            "11",
        ];
        let a = ok(&args, None, dir.path());
        assert_eq!(a, ok(&args, None, dir.path()), "{w}: same seed, same bytes");
        assert_eq!(
            a.lines()
                .filter(|l| l.contains(r#""kind":"event""#))
                .count(),
            200
        );
        let other = ok(
            &[
                "route",
                "generate",
                "--workload",
                w,
                "--squads",
                "3",
                "--events",
                "200",
                "--seed",
                "12",
            ],
            None,
            dir.path(),
        );
        assert_ne!(a, other, "{w}");
        // Every workload replays.
        ok(&["route", "replay", "-"], Some(&a), dir.path());
    }
    // The default workload is what `generate` wrote before workloads existed.
    let plain = ok(
        &["route", "generate", "--squads", "3", "--events", "50"],
        None,
        dir.path(),
    );
    let episodes = ok(
        &[
            "route",
            "generate",
            "--workload",
            "episodes",
            "--squads",
            "3",
            "--events",
            "50",
        ],
        None,
        dir.path(),
    );
    assert_eq!(plain, episodes);
    let err = usage_error(
        &["route", "generate", "--workload", "storm"],
        None,
        dir.path(),
    );
    assert!(
        err.contains("invalid value 'storm' for '--workload"),
        "{err}"
    );
    let cases: [(&[&str], &str); 9] = [
        (
            &["--workload", "review-storm", "--reporters", "33"],
            "--reporters <n>': 33 is out of range (1 to 32)",
        ),
        (
            &["--workload", "review-storm", "--reporters", "0"],
            "0 is out of range (1 to 32)",
        ),
        (
            &["--workload", "review-storm", "--report-gap-seconds", "3601"],
            "3601 is out of range (0 to 3600)",
        ),
        (
            &["--workload", "steady", "--arrival-seconds", "0"],
            "0 is out of range (1 to 86400)",
        ),
        (
            &["--workload", "steady", "--late-comment-percent", "101"],
            "101 is out of range (0 to 100)",
        ),
        (
            &["--workload", "chatter", "--loop-percent", "-1"],
            "-1 is out of range (0 to 100)",
        ),
        (
            &["--workload", "chatter", "--max-rounds", "101"],
            "101 is out of range (1 to 100)",
        ),
        (
            &["--workload", "mentions", "--mentions-per-comment", "9"],
            "9 is out of range (1 to 8)",
        ),
        (
            &["--reporters", "3"],
            "--reporters applies to --workload review-storm, not episodes",
        ),
    ];
    for (extra, want) in cases {
        let mut args = vec!["route", "generate"];
        args.extend_from_slice(extra);
        let err = usage_error(&args, None, dir.path());
        assert!(err.contains(want), "{extra:?}: {err}");
    }
    let err = usage_error(
        &[
            "route",
            "generate",
            "--workload",
            "chatter",
            "--reply-percent",
            "5",
        ],
        None,
        dir.path(),
    );
    assert!(
        err.contains("--reply-percent applies to --workload mentions, not chatter"),
        "{err}"
    );
    // A knob changes the trace.
    let a = ok(
        &[
            "route",
            "generate",
            "--workload",
            "review-storm",
            "--reporters",
            "2",
            "--events",
            "100",
        ],
        None,
        dir.path(),
    );
    let b = ok(
        &[
            "route",
            "generate",
            "--workload",
            "review-storm",
            "--reporters",
            "7",
            "--events",
            "100",
        ],
        None,
        dir.path(),
    );
    assert_ne!(a, b);
}

/// `skipped` is in every diff side and every explain item, `false` included, as docs/cli.md
/// says (it used to be left out when false).
#[test]
fn json_diff_and_explain_items_always_carry_skipped() {
    let dir = storm();
    let v: serde_json::Value = serde_json::from_str(&ok(
        &with(&["storm.jsonl", "--json", "--diff", "--diff-limit", "5"]),
        None,
        dir.path(),
    ))
    .unwrap();
    let sides: Vec<&serde_json::Value> = v["diff"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| d["policies"].as_array().unwrap())
        .collect();
    assert!(!sides.is_empty());
    assert!(sides.iter().all(|s| s["skipped"].is_boolean()), "{sides:?}");
    assert!(sides.iter().any(|s| s["skipped"] == false), "{sides:?}");
    let trace = std::fs::read_to_string(dir.path().join("storm.jsonl")).unwrap();
    let issue = trace
        .lines()
        .find(|l| l.contains(r#""type":"create_issue""#))
        .and_then(|l| l.split(r#""issue_id":""#).nth(1))
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();
    let v: serde_json::Value = serde_json::from_str(&ok(
        &with(&["storm.jsonl", "--json", "--explain", &issue]),
        None,
        dir.path(),
    ))
    .unwrap();
    for p in v["policies"].as_array().unwrap() {
        let log = p["explain"].as_array().unwrap();
        assert!(!log.is_empty());
        assert!(log.iter().all(|e| e["skipped"].is_boolean()), "{log:?}");
    }
}

/// `--diff --csv` (the example of `route simulate --help`) keeps the differences, as rows of the
/// same three columns; without `--diff` there are none.
#[test]
fn diff_with_csv_keeps_the_differences_as_rows() {
    let dir = storm();
    let parse = |text: &str| -> Vec<Vec<String>> {
        let mut r = csv::Reader::from_reader(text.as_bytes());
        assert_eq!(r.headers().unwrap(), vec!["policy", "metric", "value"]);
        r.records()
            .map(|rec| rec.unwrap().iter().map(str::to_owned).collect())
            .collect()
    };
    let rows = parse(&ok(
        &with(&["storm.jsonl", "--csv", "--diff", "--diff-limit", "3"]),
        None,
        dir.path(),
    ));
    let diff: Vec<&Vec<String>> = rows.iter().filter(|r| r[1].starts_with("diff.")).collect();
    // Three events, one row per policy each.
    assert_eq!(diff.len(), 6, "{diff:?}");
    assert_eq!(diff[0][0], "default");
    assert_eq!(diff[1][0], "barrier");
    assert_eq!(diff[0][1], diff[1][1]);
    assert!(diff[0][1].ends_with(".comment"), "{diff:?}");
    assert!(diff[1][2].contains("[leader_barrier]"), "{diff:?}");
    let plain = parse(&ok(&with(&["storm.jsonl", "--csv"]), None, dir.path()));
    assert!(plain.iter().all(|r| !r[1].starts_with("diff.")));
    assert_eq!(plain.len() + 6, rows.len());
}
