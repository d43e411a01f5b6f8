#!/usr/bin/env python3
"""Writes the memory corpus of benches/memory: three squads' histories and decisions in the
shapes real squads write (see benches/memory/README.md). Deterministic: run it again and the
files do not change. Usage: python3 benches/memory/generate.py"""
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))

# Vocabulary per squad for the filler sections (sections no question is about).
VOCAB = {
    "harbor": dict(
        things=["BlobStorageClient", "EventGrid topic", "QueueListener", "the retry policy", "SAS tokens",
                "the upload pipeline", "Contoso.Extensions.Http", "the lease renewer", "the page-blob writer",
                "the checksum validator", "ServiceBusSender", "the emulator", "the SDK samples",
                "the changelog", "the API review", "TableEntity mapping", "the metrics exporter"],
        verbs=["refactored", "pinned", "benchmarked", "documented", "split", "retried", "renamed",
               "deprecated", "profiled", "mocked out", "moved behind a feature flag", "reviewed"],
        why=["the release was close", "customers hit it in production", "the API review asked for it",
             "the tests were flaky on Linux", "the nightly run timed out", "a partner team depended on it",
             "the docs were wrong", "the sample would not compile"],
        groups=["Learnings", "Core Context", "📌 Team updates"],
    ),
    "lantern": dict(
        things=["the checkout page", "the design tokens", "useCartTotals", "the service worker",
                "the image CDN", "feature-flag-service", "the a11y audit", "the Storybook build",
                "the login form", "PriceBadge", "the router", "the bundle analyzer", "the e2e suite",
                "the dark-mode toggle", "the i18n catalog", "the search box", "the release train"],
        verbs=["rewrote", "lazy-loaded", "memoized", "audited", "snapshotted", "inlined", "code-split",
               "rolled back", "translated", "themed", "cached", "tested on Safari"],
        why=["Lighthouse flagged it", "a customer complained", "the bundle grew again",
             "the e2e suite kept timing out", "screen readers skipped it", "product asked for it",
             "the release train was blocked", "the designer changed the spec"],
        groups=["Learnings", "Core Context", "📌 Sprint notes"],
    ),
    "quarry": dict(
        things=["the nightly_ingest job", "the dedupe stage", "orders_daily", "the schema registry",
                "the Parquet writer", "the warehouse loader", "customer_dim", "the backfill runner",
                "the Airflow DAG", "the late-data window", "dq_checks", "the partition pruner",
                "the S3 lifecycle rule", "the CDC connector", "the row-count monitor", "the cost report",
                "the test fixtures"],
        verbs=["backfilled", "re-partitioned", "vacuumed", "re-keyed", "throttled", "paused",
               "rewrote in SQL", "added a check to", "sampled", "compacted", "alerted on", "documented"],
        why=["the dashboard was stale", "finance asked for it", "the job ran past its window",
             "the warehouse bill doubled", "a column changed type upstream", "duplicates showed up",
             "the on-call got paged twice", "the audit needed it"],
        groups=["Learnings", "Core Context", "📌 Pipeline log"],
    ),
}

COMMON = ["release", "deploy", "tests", "team", "agent", "review", "fix", "build", "change", "issue"]


def filler_heading(rng, v, n):
    t = rng.choice(v["things"])
    verb = rng.choice(v["verbs"])
    y, m, d = 2026, rng.randint(1, 9), rng.randint(1, 28)
    shape = rng.randrange(8)
    title = f"{t[0].upper() + t[1:]} {verb}"
    if shape == 0:
        return f"{title} (#{1000 + n}) ({y}-{m:02}-{d:02})"
    if shape == 1:
        return f"{y}-{m:02}-{d:02}: {title}"
    if shape == 2:
        return f"{y}-{m:02}: {title}"
    if shape == 3:
        return f"{n % 9 + 1}. {title}: notes"
    if shape == 4:
        return f"{title} ({y}-{m:02}-{d:02}T{rng.randint(0, 23):02}:{rng.randint(0, 59):02}:00Z)"
    if shape == 5:
        return f"{title} — {rng.choice(COMMON)} follow-up"
    if shape == 6:
        return f"{y}-{m:02}-{d:02}T{rng.randint(0, 23):02}:{rng.randint(0, 59):02}Z: {title}"
    return title


def filler_body(rng, v):
    lines = []
    for _ in range(rng.randint(2, 4)):
        kind = rng.randrange(6)
        t, t2 = rng.choice(v["things"]), rng.choice(v["things"])
        verb, why = rng.choice(v["verbs"]), rng.choice(v["why"])
        c1, c2 = rng.sample(COMMON, 2)
        if kind == 0:
            lines.append(f"- We {verb} {t} because {why}; the {c1} and the {c2} went through afterwards.")
        elif kind == 1:
            lines.append(f"**Context:** {t} and {t2} both touched the {c1} path, so the {c2} waited a day.")
        elif kind == 2:
            lines.append(f"- {t[0].upper() + t[1:]} is owned by the {c1} rotation → ask before a {c2}.")
        elif kind == 3:
            lines.append(f"**Pattern:** when {why}, check {t} first, then {t2}; a {c1} is rarely the cause.")
        elif kind == 4:
            lines.append("")
            lines.append("```sh")
            lines.append(f"# {verb} {t}")
            lines.append(f"make {c1} TARGET={c2}")
            lines.append("```")
        else:
            lines.append(f"| step | owner |\n|---|---|\n| {c1} | {t} |\n| {c2} | {t2} |")
    return "\n".join(lines)


def history(rng, squad, agent, facts, size, style):
    v = VOCAB[squad]
    sections = [(f["heading"], f["body"], f.get("level", 3), f.get("group")) for f in facts]
    n = 0
    while sum(len(h) + len(b) + 10 for h, b, _, _ in sections) < size:
        n += 1
        sections.append((filler_heading(rng, v, n), filler_body(rng, v), 3, None))
    rng.shuffle(sections)
    if style == "newest_first":
        sections.sort(key=lambda s: s[0][:10], reverse=True)
    out = [f"# {agent.upper()}", "", f"> {agent.capitalize()}'s history — learnings kept by the agent.", "",
           "## Core Context", "", f"- {agent.capitalize()} works on the {squad} squad.",
           f"- Prefers small PRs; pairs with the lead on every {rng.choice(COMMON)}.", "", "## Learnings", ""]
    dup = None
    for i, (h, b, level, group) in enumerate(sections):
        if group:
            out += [f"## {group}", ""]
        out.append("#" * level + " " + h)
        out.append(b)
        out.append("")
        if i == len(sections) // 3:
            dup = (h, b, level)
            # A bodiless heading right before a heading that repeats an earlier one.
            out += ["## 📌 Session wrap-up", "## Learnings", ""]
    if dup:  # git's merge=union left the same section twice
        out += ["#" * dup[2] + " " + dup[0], dup[1], ""]
    text = "\n".join(out) + "\n"
    if style == "crlf":
        text = text.replace("\n", "\r\n", 40).replace("\r\n", "\n", 20)
    return text


def decisions(rng, squad, facts, size):
    v = VOCAB[squad]
    out = ["# Decisions", "", "> Team decisions; the newest at the bottom of each group.", "", "---", "",
           "## Process", ""]
    secs = [(f["heading"], f["body"]) for f in facts]
    n = 0
    while sum(len(h) + len(b) + 10 for h, b in secs) < size:
        n += 1
        t = rng.choice(v["things"])
        who = rng.choice(["Mara", "Ines", "Kofi", "Tomás", "Lee"])
        secs.append((f"2026-{rng.randint(1, 9):02}-{rng.randint(1, 28):02}: {t[0].upper() + t[1:]} stays {rng.choice(v['verbs'])}",
                     f"**By:** {who}\n**What:** {t} stays as it is for this {rng.choice(COMMON)}.\n**Why:** {rng.choice(v['why'])}."))
    rng.shuffle(secs)
    half = len(secs) // 2
    for i, (h, b) in enumerate(secs):
        if i == half:
            out += ["---", "", "## Engineering", ""]
        out += [f"### {h}", b, ""]
    return "\n".join(out) + "\n"


def write_squad(squad, agents, dec_facts, dec_size, questions, seed):
    rng = random.Random(seed)
    base = os.path.join(HERE, squad)
    for agent, facts, size, style in agents:
        d = os.path.join(base, "agents", agent)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "history.md"), "w", newline="") as f:
            f.write(history(rng, squad, agent, facts, size, style))
    with open(os.path.join(base, "decisions.md"), "w", newline="") as f:
        f.write(decisions(rng, squad, dec_facts, dec_size))
    with open(os.path.join(base, "questions.tsv"), "w") as f:
        f.write("# agent\tquestion\tevidence line\n")
        for q in questions:
            f.write("\t".join(q) + "\n")


def F(heading, body, level=3, group=None):
    return dict(heading=heading, body=body, level=level, group=group)


from facts import SQUADS  # noqa: E402  (the hand-written sections and their questions)

if __name__ == "__main__":
    for i, (squad, agents, dec_facts, dec_size, questions) in enumerate(SQUADS(F)):
        write_squad(squad, agents, dec_facts, dec_size, questions, 1000 + i)
