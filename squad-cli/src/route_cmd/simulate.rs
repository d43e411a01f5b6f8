//! `squad route simulate`: one trace, several policies, side by side: a table, `--json`,
//! `--csv`, an SVG chart, the first differences and the decision log of one issue.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};

use squad_model::{AgentId, IssueId};
use squad_routing::simulate::{
    ExplainEntry, MAX_POLICIES, NamedPolicy, Report, SimOptions, Trace, metric_rows, simulate,
};
use squad_routing::{Decision, RoutingPolicy};

use super::{for_each_line, read_policy};
use crate::ctx::{CliError, CmdResult, Ctx, bounded, outln};

/// The largest weights file read (1 MiB).
const MAX_WEIGHTS_BYTES: u64 = 1 << 20;
/// The largest cost (of a wake, or an agent's weight).
const MAX_COST: f64 = 1_000_000.0;
/// The most loops the table lists per policy.
const LOOPS_SHOWN: usize = 5;

pub(super) const AFTER_HELP: &str = "\
Each policy file is a JSON object of RoutingPolicy fields (`{}` is the default policy), named in \
the output by its file's stem. The policy equal to --reference (default: the default policy) \
replays the trace exactly as `squad route replay` does; any other is a counterfactual run: the \
trace's events happen at their times whatever it decided, the tasks the trace names are matched \
to its own (the same agent on the same issue), events about a wake it did not make are skipped \
and counted, and its deferred tasks come due at their due time.

Metrics: enqueued (every enqueue, deferred ones included), enqueued_leader, cancelled by reason, \
coalesced, escalations scheduled and fired, rejections by status, redundant_wakes (no new \
comment, assignment or child result since the agent's previous task on the issue), \
wakes_after_end (on a done or cancelled issue), loops (chains of at least --loop-min \
agent-triggered wakes), time_to_first_wake (p50, p95, max, in seconds), cost (--task-cost per \
wake times the agent's --weights, default 1).

Example:
  echo '{}' > default.json
  echo '{\"leader_barrier_seconds\": 120}' > barrier.json
  squad route generate --workload review-storm --events 5000 > storm.jsonl
  squad route simulate --policy default.json --policy barrier.json storm.jsonl --svg wakes.svg
  squad route simulate --policy default.json --policy barrier.json storm.jsonl --diff --csv";

/// Arguments of `squad route simulate`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The trace (JSON Lines), or `-` for stdin.
    #[arg(value_name = "trace.jsonl|-")]
    trace: PathBuf,
    /// A policy file (a JSON object of RoutingPolicy fields, at most 1 MiB); repeat it to
    /// compare policies (1 to 16). Each is named by its file's stem.
    #[arg(long = "policy", value_name = "FILE", required = true)]
    policies: Vec<PathBuf>,
    /// The policy the trace was recorded under (default: the default policy).
    #[arg(long, value_name = "FILE")]
    reference: Option<PathBuf>,
    /// Also show the first events on which the policies decided differently.
    #[arg(long)]
    diff: bool,
    /// How many differing events --diff shows: 1 to 10000.
    #[arg(long, value_name = "N", default_value_t = 20, allow_negative_numbers = true,
          value_parser = bounded(1, 10_000))]
    diff_limit: u64,
    /// Print the decision log of one issue (its id) under each policy: every decision with
    /// its rule.
    #[arg(long, value_name = "ISSUE")]
    explain: Option<String>,
    /// Print one row per policy and metric (`policy,metric,value`) instead of the table; with
    /// --diff, also one row per policy and differing event (metric `diff.<line>.<event>`).
    #[arg(long)]
    csv: bool,
    /// Also write a chart of the cumulative wakes over trace time, one line per policy (SVG).
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// The shortest chain of agent-triggered wakes counted as a loop: 1 to 1000.
    #[arg(long, value_name = "N", default_value_t = 4, allow_negative_numbers = true,
          value_parser = bounded(1, 1_000))]
    loop_min: u64,
    /// The cost of one wake: 0 to 1000000.
    #[arg(long, value_name = "X", default_value = "1", allow_negative_numbers = true,
          value_parser = parse_cost)]
    task_cost: f64,
    /// Per-agent weights of the cost: a JSON object `{"<agent id>": <weight>}` (0 to 1000000;
    /// agents not named weigh 1).
    #[arg(long, value_name = "FILE")]
    weights: Option<PathBuf>,
}

fn parse_cost(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    if v.is_finite() && (0.0..=MAX_COST).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{text} is out of range (0 to 1000000)"))
    }
}

pub(super) fn run(a: &Args, ctx: &Ctx) -> CmdResult {
    if a.csv && ctx.json {
        return Err(CliError::usage(
            "--csv and --json are two outputs: choose one",
        ));
    }
    if a.policies.len() > MAX_POLICIES {
        return Err(CliError::usage(format!(
            "{} policies given, more than the limit of {MAX_POLICIES}",
            a.policies.len()
        )));
    }
    let mut policies: Vec<NamedPolicy> = Vec::with_capacity(a.policies.len());
    for path in &a.policies {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                CliError::usage(format!("policy '{}' has no file name", path.display()))
            })?
            .to_owned();
        if policies.iter().any(|p| p.name == name) {
            return Err(CliError::usage(format!(
                "two policies are named '{name}' (policies are named by their file's stem)"
            ))
            .with_hint("give each policy file its own name"));
        }
        policies.push(NamedPolicy::new(name, read_policy(&ctx.resolve(path))?));
    }
    let reference = match &a.reference {
        Some(p) => read_policy(&ctx.resolve(p))?,
        None => RoutingPolicy::default(),
    };
    let agent_weights = match &a.weights {
        Some(p) => read_weights(&ctx.resolve(p))?,
        None => BTreeMap::new(),
    };
    let explain = match &a.explain {
        Some(text) => Some(IssueId::new(text.as_str()).map_err(|e| {
            CliError::usage(format!("--explain: '{text}' is not an issue id: {e}"))
        })?),
        None => None,
    };
    let mut trace = Trace::new();
    for_each_line(ctx, &a.trace, |line| {
        trace
            .push_line(line)
            .map_err(|e| CliError::usage(e.to_string()))
    })?;
    if let Some(issue) = &explain
        && !trace.has_issue(issue)
    {
        return Err(
            CliError::usage(format!("--explain: issue '{issue}' is not in the trace"))
                .with_hint("name an issue the trace defines or creates"),
        );
    }
    let opts = SimOptions {
        reference,
        loop_min: u32::try_from(a.loop_min).unwrap_or(u32::MAX),
        task_cost: a.task_cost,
        agent_weights,
        explain,
        diff_limit: if a.diff {
            usize::try_from(a.diff_limit).unwrap_or(usize::MAX)
        } else {
            0
        },
    };
    let report = simulate(&trace, &policies, &opts).map_err(|e| CliError::usage(e.to_string()))?;
    // The chart is written first: a failure leaves no output that looks complete.
    if let Some(svg) = &a.svg {
        write_svg(&report, &ctx.resolve(svg))?;
    }
    if ctx.json {
        let value = serde_json::to_value(&report)
            .map_err(|e| CliError::failure(format!("cannot print JSON: {e}")))?;
        ctx.print_json(&value)?;
        return Ok(0);
    }
    if a.csv {
        return print_csv(ctx, &report, a.diff).map(|()| 0);
    }
    print_table(ctx, &report)?;
    if a.diff {
        print_diff(ctx, &report)?;
    }
    if let Some(issue) = &opts.explain {
        for p in &report.policies {
            print_explain(
                ctx,
                issue,
                &p.name,
                p.explain.as_deref().unwrap_or_default(),
            )?;
        }
    }
    Ok(0)
}

/// Reads `{"<agent id>": <weight>}`.
fn read_weights(path: &Path) -> Result<BTreeMap<AgentId, f64>, CliError> {
    let cannot =
        |e: std::io::Error| CliError::usage(format!("cannot read '{}': {e}", path.display()));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut text = String::new();
    file.take(MAX_WEIGHTS_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(cannot)?;
    let bad = |what: String| {
        CliError::usage(format!("invalid weights '{}': {what}", path.display())).with_hint(
            "weights are one JSON object of agent ids and numbers, e.g. {\"<agent id>\": 2.5}",
        )
    };
    if text.len() as u64 > MAX_WEIGHTS_BYTES {
        return Err(bad("larger than the limit of 1 MiB".into()));
    }
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("invalid JSON: {e}")))?;
    let serde_json::Value::Object(map) = value else {
        return Err(bad("not a JSON object".into()));
    };
    let mut out = BTreeMap::new();
    for (k, v) in map {
        let id =
            AgentId::new(k.as_str()).map_err(|e| bad(format!("'{k}' is not an agent id: {e}")))?;
        let w = v
            .as_f64()
            .filter(|w| w.is_finite() && (0.0..=MAX_COST).contains(w))
            .ok_or_else(|| {
                bad(format!(
                    "the weight of '{k}' must be a number from 0 to 1000000"
                ))
            })?;
        out.insert(id, w);
    }
    Ok(out)
}

/// The value as the table shows it: whole numbers as they are, others with two decimals.
fn shown(v: &str) -> String {
    match v.parse::<f64>() {
        Ok(f) if f.fract() != 0.0 => format!("{f:.2}"),
        Ok(f) if v.contains('.') => format!("{f:.0}"),
        _ => v.to_owned(),
    }
}

/// Every metric row of every policy: the union of the names, in first-seen order.
fn table_rows(report: &Report) -> (Vec<String>, Vec<BTreeMap<String, String>>) {
    let mut names: Vec<String> = Vec::new();
    let mut values = Vec::new();
    for p in &report.policies {
        let rows = metric_rows(&p.metrics);
        for (k, _) in &rows {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
        values.push(rows.into_iter().collect::<BTreeMap<_, _>>());
    }
    (names, values)
}

fn print_table(ctx: &Ctx, report: &Report) -> Result<(), CliError> {
    let (names, values) = table_rows(report);
    let width = names.iter().map(String::len).max().unwrap_or(6).max(6);
    let cols: Vec<usize> = report
        .policies
        .iter()
        .map(|p| p.name.chars().count().max(10) + usize::from(p.counterfactual))
        .collect();
    let mut line = format!("{:<width$}", "metric");
    for (p, w) in report.policies.iter().zip(&cols) {
        let head = if p.counterfactual {
            format!("{}*", p.name)
        } else {
            p.name.clone()
        };
        let _ = write!(line, "  {head:>w$}");
    }
    outln!(ctx, "{}", line.trim_end())?;
    for name in &names {
        let mut line = format!("{name:<width$}");
        for (v, w) in values.iter().zip(&cols) {
            // A reason or a status no run of this policy met is a count of 0.
            let cell = v.get(name).map_or_else(|| "0".to_owned(), |x| shown(x));
            let cell = if cell.is_empty() {
                "-".to_owned()
            } else {
                cell
            };
            let _ = write!(line, "  {cell:>w$}");
        }
        outln!(ctx, "{}", line.trim_end())?;
    }
    if report.policies.iter().any(|p| p.counterfactual) {
        outln!(
            ctx,
            "\n* counterfactual: not the policy the trace was recorded under; replayed open-loop \
             (see squad route simulate --help)"
        )?;
    }
    for p in &report.policies {
        let m = &p.metrics;
        if m.loops.is_empty() {
            continue;
        }
        outln!(
            ctx,
            "\nAgent loops under {} ({} found; the longest):",
            p.name,
            m.loop_count
        )?;
        for l in m.loops.iter().take(LOOPS_SHOWN) {
            let chain: Vec<&str> = l.agents.iter().map(AgentId::as_str).collect();
            let issue = l.issue.as_ref().map_or("(no issue)", IssueId::as_str);
            outln!(
                ctx,
                "  {issue}: {} ({} wakes)",
                chain.join(" -> "),
                l.length
            )?;
        }
    }
    Ok(())
}

/// The metric rows, then with `--diff` one row per policy and differing event: metric
/// `diff.<line>.<event>`, value the decisions as the table's diff describes them (or `skipped`).
fn print_csv(ctx: &Ctx, report: &Report, diff: bool) -> Result<(), CliError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let err = |e: csv::Error| CliError::failure(format!("cannot write CSV: {e}"));
    w.write_record(["policy", "metric", "value"]).map_err(err)?;
    for p in &report.policies {
        for (k, v) in metric_rows(&p.metrics) {
            w.write_record([p.name.as_str(), k.as_str(), v.as_str()])
                .map_err(err)?;
        }
    }
    if diff {
        for d in &report.diff {
            let metric = format!("diff.{}.{}", d.line, d.event);
            for side in &d.policies {
                let value = if side.skipped {
                    "skipped".to_owned()
                } else {
                    side.decisions
                        .iter()
                        .map(describe)
                        .collect::<Vec<_>>()
                        .join("; ")
                };
                w.write_record([side.name.as_str(), metric.as_str(), value.as_str()])
                    .map_err(err)?;
            }
        }
    }
    let bytes = w
        .into_inner()
        .map_err(|e| CliError::failure(format!("cannot write CSV: {e}")))?;
    ctx.out_bytes(&bytes)
}

/// One decision in a line of text, with its rule.
/// The name a routing value has on the wire (`"assign"`, `"self_trigger_suppressed"`, ...).
fn wire_name(v: &impl serde::Serialize) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn describe(d: &Decision) -> String {
    let rule = d
        .rule()
        .map(|r| format!(" [{}]", r.id()))
        .unwrap_or_default();
    match d {
        Decision::Enqueue {
            task,
            source,
            delay_seconds,
            ..
        } => {
            let role = if task.is_leader_task {
                "leader task"
            } else {
                "task"
            };
            let due = delay_seconds.map_or_else(String::new, |s| format!(", due in {s} s"));
            let source = wire_name(source);
            format!(
                "wake {} ({role} {}, {source}{due}){rule}",
                task.agent_id, task.id
            )
        }
        Decision::Coalesce {
            agent_id,
            task_id,
            comment_id,
            ..
        } => format!("merge comment {comment_id} into {agent_id}'s task {task_id}{rule}"),
        Decision::Cancel {
            task_id, reason, ..
        } => format!("cancel task {task_id} ({reason}){rule}"),
        Decision::Noop {
            reason, agent_id, ..
        } => {
            let reason = wire_name(reason);
            match agent_id {
                Some(a) => format!("no wake for {a}: {reason}{rule}"),
                None => format!("no wake: {reason}{rule}"),
            }
        }
        Decision::Mention {
            mention_type,
            mention_id,
            outcome,
            reason,
            ..
        } => {
            let outcome = wire_name(outcome);
            let why = reason.map_or_else(String::new, |r| format!(" ({r})"));
            format!("mention of {mention_type} {mention_id}: {outcome}{why}{rule}")
        }
        Decision::Reject { code, message } => format!("refused {code}: {message}"),
        Decision::PostComment { comment, system } => {
            let who = if *system { "system comment" } else { "comment" };
            format!("{who} {} saved", comment.id)
        }
        Decision::SetTaskStatus { task_id, status } => {
            let status = wire_name(status);
            format!("task {task_id} is {status}")
        }
        other => serde_json::to_value(other)
            .ok()
            .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned))
            .unwrap_or_else(|| "decision".to_owned())
            .replace('_', " "),
    }
}

fn print_diff(ctx: &Ctx, report: &Report) -> Result<(), CliError> {
    if report.diff.is_empty() {
        return outln!(ctx, "\nThe policies decided the same on every event.");
    }
    outln!(
        ctx,
        "\nFirst {} events decided differently:",
        report.diff.len()
    )?;
    for d in &report.diff {
        outln!(ctx, "line {} ({})", d.line, d.event)?;
        for side in &d.policies {
            if side.skipped {
                outln!(ctx, "  {}: skipped", side.name)?;
                continue;
            }
            let text: Vec<String> = side.decisions.iter().map(describe).collect();
            outln!(ctx, "  {}: {}", side.name, text.join("; "))?;
        }
    }
    Ok(())
}

fn print_explain(
    ctx: &Ctx,
    issue: &IssueId,
    policy: &str,
    log: &[ExplainEntry],
) -> Result<(), CliError> {
    outln!(ctx, "\nThe story of issue {issue} under {policy}:")?;
    if log.is_empty() {
        return outln!(ctx, "  (no event concerns it)");
    }
    for e in log {
        let place = e
            .line
            .map_or_else(|| "scheduler".to_owned(), |l| format!("line {l}"));
        let by =
            e.by.as_ref()
                .map(|p| match p {
                    squad_routing::Principal::Member(u) => format!(" by member {u}"),
                    squad_routing::Principal::Agent(a) => format!(" by agent {a}"),
                    squad_routing::Principal::System => " by the system".to_owned(),
                })
                .unwrap_or_default();
        let at = e.at.to_string();
        if e.skipped {
            outln!(
                ctx,
                "  {place}  {at}  {}{by}: skipped (the work of a wake this policy did not make)",
                e.event
            )?;
            continue;
        }
        outln!(ctx, "  {place}  {at}  {}{by}", e.event)?;
        for d in &e.decisions {
            let why = d
                .rule()
                .map(|r| format!("\n        {} ({}): {}", r.id(), r.section(), r.summary()))
                .unwrap_or_default();
            outln!(ctx, "    - {}{why}", describe(d))?;
        }
    }
    Ok(())
}

/// The chart: cumulative wakes over trace time, one line per policy.
fn write_svg(report: &Report, path: &Path) -> Result<(), CliError> {
    use plotters::prelude::*;

    let Some(start) = report.start else {
        return Err(CliError::usage("--svg: the trace has no event to chart"));
    };
    let start = start.unix_millis();
    let secs = |ms: i64| (ms - start).max(0) as f64 / 1000.0;
    let span = report
        .policies
        .iter()
        .filter_map(|p| p.wake_times.last())
        .map(|t| secs(*t))
        .fold(1.0, f64::max);
    let (unit, div) = if span <= 2.0 * 3600.0 {
        ("seconds", 1.0)
    } else if span <= 48.0 * 3600.0 {
        ("minutes", 60.0)
    } else {
        ("hours", 3600.0)
    };
    let x_max = span / div;
    let y_max = report
        .policies
        .iter()
        .map(|p| p.wake_times.len())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let mut svg = String::new();
    let draw = |svg: &mut String| -> Result<(), Box<dyn std::error::Error>> {
        let root = SVGBackend::with_string(svg, (960, 540)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Cumulative wakes over trace time", ("sans-serif", 22))
            .margin(20)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..x_max * 1.02, 0f64..y_max * 1.05)?;
        chart
            .configure_mesh()
            .x_desc(format!("trace time ({unit} since the first event)"))
            .y_desc("wakes so far")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()?;
        for (k, p) in report.policies.iter().enumerate() {
            let color = Palette99::pick(k).to_rgba();
            // A step line, thinned to at most about 2,000 steps per policy.
            let n = p.wake_times.len();
            let every = n.div_ceil(2_000).max(1);
            let mut points = vec![(0.0, 0.0)];
            for (i, t) in p.wake_times.iter().enumerate() {
                if (i + 1) % every != 0 && i + 1 != n {
                    continue;
                }
                let x = secs(*t) / div;
                let prev = points.last().map_or(0.0, |p| p.1);
                points.push((x, prev));
                points.push((x, (i + 1) as f64));
            }
            points.push((x_max, n as f64));
            let label = if p.counterfactual {
                format!("{} (counterfactual)", p.name)
            } else {
                p.name.clone()
            };
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw(&mut svg).map_err(|e| CliError::failure(format!("cannot draw the chart: {e}")))?;
    write_atomically(path, svg.as_bytes())
}

/// Writes a file through a temporary file in the same directory and a rename: a reader never
/// sees half a chart.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."));
    if !dir.is_dir() {
        return Err(CliError::usage(format!(
            "--svg: directory '{}' does not exist",
            dir.display()
        )));
    }
    let Some(name) = path.file_name() else {
        return Err(CliError::usage(format!(
            "--svg: '{}' is not a file name",
            path.display()
        )));
    };
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let failed = |e: std::io::Error| {
        let _ = std::fs::remove_file(&tmp);
        CliError::failure(format!("cannot write '{}': {e}", path.display()))
    };
    std::fs::write(&tmp, bytes).map_err(failed)?;
    std::fs::rename(&tmp, path).map_err(failed)
}
