//! The hand-written sections of the realistic fixture: each holds one evidence line, and a
//! question a user would ask whose answer is that line (phrased in the user's words, not the
//! line's).

/// One section with the line that answers a question about it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fact {
    /// `data`, `worf`, `troi`, `ralph`, or `decisions`.
    pub(crate) owner: &'static str,
    /// The `### ` heading text.
    pub(crate) heading: &'static str,
    /// The body, verbatim.
    pub(crate) body: &'static str,
    /// The line of the body that answers the question.
    pub(crate) evidence: &'static str,
    /// The question, as a user would ask it.
    pub(crate) question: &'static str,
}

pub(crate) const FACTS: &[Fact] = &[
    // ---- data: CLI and releases --------------------------------------------------------------
    Fact {
        owner: "data",
        heading: "Release v0.8.21 tarball shipped without dist/ (#977) (2026-05-01)",
        body: "**Context:** the 0.8.21 package installed fine but `squad --version` crashed with \
`Cannot find module './dist/cli.js'`.\n\n**Problem:** the publish job packed the repository before \
the TypeScript build had run.\n- Root cause: `npm publish` ran before `npm run build`, so the tarball had no compiled `dist/` folder.\n\
- Users on 0.8.21 had to pin 0.8.20 for a day.\n\n**Fix:** `prepublishOnly` now runs the build, and CI \
checks `npm pack --dry-run` lists `dist/cli.js`.\n\n**Key learning:** never trust a green publish step; \
install the tarball in a clean directory before announcing.",
        evidence: "- Root cause: `npm publish` ran before `npm run build`, so the tarball had no compiled `dist/` folder.",
        question: "Why was the package we put out for 0.8.21 missing its compiled JavaScript?",
    },
    Fact {
        owner: "data",
        heading: "2026-03-14: CLI entry point resolves the squad root from git",
        body: "The CLI used to look for `.squad/` in the current directory only, which broke every \
command run from a subfolder.\n\n- `findSquadRoot()` now walks up to the directory holding `.git` and looks for `.squad/` there.\n\
- Outside a repository it stops at the filesystem root and prints a hint.\n- Tests cover a nested \
`packages/a/b` working directory.\n\n```ts\nconst root = findSquadRoot(process.cwd());\n```",
        evidence: "- `findSquadRoot()` now walks up to the directory holding `.git` and looks for `.squad/` there.",
        question: "How does the command line figure out where the team folder is when I run it from a subdirectory?",
    },
    Fact {
        owner: "data",
        heading: "2025-07: Windows path separators in the agent loader",
        body: "Charters failed to load on Windows because the loader split paths on `/`.\n\n\
**Fix:** use `path.join` and `path.sep` everywhere; never build paths with string concatenation.\n\
- Only Windows runners caught it; the macOS and Linux jobs were green.\n- Added a `windows-latest` job to the test matrix — it adds ~4 minutes.",
        evidence: "**Fix:** use `path.join` and `path.sep` everywhere; never build paths with string concatenation.",
        question: "What did we change so agent charters load on Windows machines?",
    },
    Fact {
        owner: "data",
        heading: "2026-03-01T00:34Z: Out-of-memory in the TypeScript build on CI",
        body: "The `tsc -b` step died with `JavaScript heap out of memory` on the 7 GB runners after \
the SDK grew past 400 files.\n\n- Raised the heap: `NODE_OPTIONS=--max-old-space-size=6144` in the build job only.\n\
- Splitting the project references would be the real fix; tracked in #1203.\n- Local builds were \
unaffected (16 GB laptops).",
        evidence: "- Raised the heap: `NODE_OPTIONS=--max-old-space-size=6144` in the build job only.",
        question: "The compile step in CI kept crashing from running out of RAM — how did we get around that?",
    },
    Fact {
        owner: "data",
        heading: "1. Version bump checklist: what goes in a release commit",
        body: "1. Bump `package.json` in the root and in `packages/squad-cli` and `packages/squad-sdk` together.\n\
2. Run `npm install` so the lockfile picks up the new workspace versions.\n3. Update `CHANGELOG.md` \
— move Unreleased under the new version heading.\n4. Tag as `v<version>` on main, never on a release branch.\n\
5. Push the tag; the publish workflow does the rest.",
        evidence: "4. Tag as `v<version>` on main, never on a release branch.",
        question: "Which branch should the version tag go on when we cut a release?",
    },
    Fact {
        owner: "data",
        heading: "CLI Entry Point Architecture",
        body: "`bin/squad.js` is a thin shim: it checks the Node version, then imports `dist/cli.js`.\n\n\
| command | module |\n|---|---|\n| `init` | `commands/init.ts` |\n| `upgrade` | `commands/upgrade.ts` |\n| `nap` | `commands/nap.ts` |\n\n\
- The shim refuses Node older than 20 with a one-line message instead of a stack trace.\n- Each command module exports `run(args, ctx)`; nothing runs at import time.",
        evidence: "- The shim refuses Node older than 20 with a one-line message instead of a stack trace.",
        question: "What happens if someone starts the tool with an outdated Node runtime?",
    },
    Fact {
        owner: "data",
        heading: "Upgrade command keeps user edits (2026-03-15T05:30:00Z)",
        body: "**Problem:** `squad upgrade` overwrote charters that users had edited by hand.\n\n\
**Pattern:** three-way merge — the installed template, the new template and the user's file.\n\
- If the user never touched the file, it is replaced.\n- If both changed, the new template is written next to it as `charter.md.new` and the user is told.\n\
- A dry run (`--dry-run`) prints the plan and writes nothing.",
        evidence: "- If both changed, the new template is written next to it as `charter.md.new` and the user is told.",
        question: "When upgrading, what happens to a charter file that I customised and that also changed upstream?",
    },
    Fact {
        owner: "data",
        heading: "2026-04-02: `nap` archives history → history-archive.md",
        body: "`squad nap` compacts histories over 15 KB.\n\n- Keeps `## Core Context` and the last 5 entries (3 with `--deep`).\n\
- Everything else is appended to `history-archive.md`; nothing is deleted.\n- Undated entries are kept in place — they used to be dropped (#626).\n\
- The journal file makes a half-done nap recoverable.",
        evidence: "- Keeps `## Core Context` and the last 5 entries (3 with `--deep`).",
        question: "How many recent items survive when the compaction command shrinks a long history?",
    },
    Fact {
        owner: "data",
        heading: "Flaky `init` test on macOS — temp dirs & symlinks (2026-02-11)",
        body: "The `init` integration test failed one run in ten on macOS only.\n\n\
**Context:** `/var` is a symlink to `/private/var` there, so paths compared before and after `realpath` differed.\n\
- **Fix:** compare `fs.realpathSync()` of both sides.\n- Not a race at all, despite looking like one.",
        evidence: "**Context:** `/var` is a symlink to `/private/var` there, so paths compared before and after `realpath` differed.",
        question: "Why did the init integration test fail intermittently only on Apple machines?",
    },
    Fact {
        owner: "data",
        heading: "Release incident: tag pushed twice (2026-03-23 Release Incident)",
        body: "Two maintainers pushed `v0.8.24` within a minute; the second push moved the tag and npm got the older commit.\n\n\
- The registry never lets a version be republished, so 0.8.25 was cut to ship the fix.\n- Since then only the release workflow may create `v*` tags (branch protection rule on tags).\n\
- Café-time postmortem notes are in the team wiki.",
        evidence: "- Since then only the release workflow may create `v*` tags (branch protection rule on tags).",
        question: "After the double tag mix-up, who is allowed to create version tags?",
    },
    // ---- worf: security and CI ---------------------------------------------------------------
    Fact {
        owner: "worf",
        heading: "2026-01-20: Token scopes for the GitHub integration",
        body: "The approval bot used a classic PAT with `repo` scope — far more than it needs.\n\n\
- Switched to a fine-grained token: Issues read/write and Metadata read, nothing else.\n- The token lives in the `SQUAD_BOT_TOKEN` secret; rotation every 90 days.\n\
- Audit: the old PAT was revoked the same day.",
        evidence: "- Switched to a fine-grained token: Issues read/write and Metadata read, nothing else.",
        question: "What permissions does the bot's GitHub credential have now?",
    },
    Fact {
        owner: "worf",
        heading: "Webhook signatures verified in constant time (#1141) (2026-02-03)",
        body: "**Problem:** the webhook receiver compared HMACs with `===`.\n\n- `crypto.timingSafeEqual` on equal-length buffers; a length mismatch is rejected before comparing.\n\
- Replays: the signed body carries `sent_at`; anything older than 5 minutes is refused.\n- Tests feed signatures that differ in the first and in the last byte.",
        evidence: "- Replays: the signed body carries `sent_at`; anything older than 5 minutes is refused.",
        question: "How do we stop someone from resending an old webhook delivery?",
    },
    Fact {
        owner: "worf",
        heading: "2025-11: Dependency review gate",
        body: "Every pull request runs `actions/dependency-review-action`.\n\n- It fails on new dependencies with a known high or critical advisory.\n\
- Licenses outside MIT, Apache-2.0, BSD and ISC need a maintainer's approval label `license-ok`.\n- Dependabot PRs are grouped weekly to keep the noise down.",
        evidence: "- Licenses outside MIT, Apache-2.0, BSD and ISC need a maintainer's approval label `license-ok`.",
        question: "What do I have to do to add a package with a GPL licence?",
    },
    Fact {
        owner: "worf",
        heading: "CI cache poisoning review",
        body: "Reviewed how the workflows share caches between forks and main.\n\n- `pull_request_target` is banned in this repo: it runs with secrets on untrusted code.\n\
- Caches are keyed by `hashFiles('package-lock.json')` and restored read-only on PRs from forks.\n- Nothing from a fork's job is ever saved to the shared cache.",
        evidence: "- `pull_request_target` is banned in this repo: it runs with secrets on untrusted code.",
        question: "Which workflow trigger are we not allowed to use, and why?",
    },
    Fact {
        owner: "worf",
        heading: "2026-03-07T01:50:00Z: Secrets leaked into a debug log",
        body: "A contributor's debug branch printed the full environment in CI.\n\n#### What happened\n\
GitHub masked the token in the log, but the artifact upload kept an unmasked copy.\n\n#### What changed\n\
- Artifacts are now scanned with `gitleaks` before upload and the job fails on a hit.\n- Debug logging never prints `process.env`; it prints the names of the variables only.",
        evidence: "- Artifacts are now scanned with `gitleaks` before upload and the job fails on a hit.",
        question: "What check did we add so credentials cannot slip out through uploaded build files?",
    },
    Fact {
        owner: "worf",
        heading: "Signed commits on main — enforcement → warning (2026-04-18)",
        body: "Requiring signed commits blocked the release bot, which cannot sign.\n\n\
- The rule is now a status check that warns on unsigned human commits instead of blocking.\n- Bot commits are identified by the `squad-release[bot]` author and exempt.\n\
- Revisit once the bot has an SSH signing key (#1288).",
        evidence: "- The rule is now a status check that warns on unsigned human commits instead of blocking.",
        question: "Do unsigned commits still get rejected on the main branch?",
    },
    Fact {
        owner: "worf",
        heading: "2026-02-28: Rate limits on the GitHub API",
        body: "The approval poller hit the secondary rate limit during a busy release.\n\n\
- Polling interval is 30 s with jitter; on a 403 with `retry-after` we wait exactly that long.\n- Conditional requests (`If-None-Match`) do not count against the limit when the answer is 304.\n\
- A single poller per repository, elected by a lock in `state.json`.",
        evidence: "- Conditional requests (`If-None-Match`) do not count against the limit when the answer is 304.",
        question: "How does the poller avoid burning through its API quota when nothing has changed?",
    },
    Fact {
        owner: "worf",
        heading: "Threat model for `.squad/` in pull requests",
        body: "Anything under `.squad/` can arrive in a pull request from a fork.\n\n\
- Symlinks under `.squad/` are never followed; a PR that adds one fails the `squad doctor` check.\n- Charters are treated as prompts: they can steer an agent, so changes need CODEOWNERS review.\n\
- `decisions.md` edits outside the promotion flow are flagged.",
        evidence: "- Symlinks under `.squad/` are never followed; a PR that adds one fails the `squad doctor` check.",
        question: "Can a contributor's PR make our tools read files outside the repo through links?",
    },
    // ---- troi: docs and community ------------------------------------------------------------
    Fact {
        owner: "troi",
        heading: "2026-01-09: Docs site moved to Astro",
        body: "The docs moved from a hand-rolled generator to Astro Starlight.\n\n- Sidebar order comes from the `order` front-matter field, not file names.\n\
- Old URLs redirect through `public/_redirects`; 140 rules, generated once.\n- The search index builds at deploy time (Pagefind), no external service.",
        evidence: "- Sidebar order comes from the `order` front-matter field, not file names.",
        question: "How do I control where a page shows up in the docs navigation?",
    },
    Fact {
        owner: "troi",
        heading: "Contributor guide rewrite (#1004) (2026-02-14)",
        body: "**Task:** make the first PR possible in under an hour.\n\n- One command to set up: `npm run bootstrap` installs, builds and runs the smoke test.\n\
- Issues labelled `good first issue` must name the files to touch.\n- The guide is tested: CI follows it in a fresh container every week.",
        evidence: "- One command to set up: `npm run bootstrap` installs, builds and runs the smoke test.",
        question: "What should a newcomer run to get a working development setup?",
    },
    Fact {
        owner: "troi",
        heading: "2025-12: Tone guide for agent replies",
        body: "Agents answering in issues sounded robotic.\n\n- Lead with the answer, then the reasoning; no \"Great question!\".\n\
- Never promise dates; say what is done and what is next.\n- Sign replies with the agent's name in italics, e.g. *— Troi*.",
        evidence: "- Never promise dates; say what is done and what is next.",
        question: "Are agents allowed to tell people when a feature will ship?",
    },
    Fact {
        owner: "troi",
        heading: "Translating the README — naïve attempt & what worked (2026-03-02)",
        body: "Machine translation of the README into Español and Français went badly.\n\n\
- Code blocks and command names were translated too (`squad init` became `escuadrón init`).\n- Now only prose is sent for translation; code spans are masked first and restored after.\n\
- Native speakers from the community review each language before it is linked.",
        evidence: "- Now only prose is sent for translation; code spans are masked first and restored after.",
        question: "How do we keep commands from getting mangled when the readme is localised?",
    },
    Fact {
        owner: "troi",
        heading: "2026-04-11: Discussions triage rotation",
        body: "GitHub Discussions had 60 unanswered threads.\n\n- Each weekday one agent owns triage; the rota is in `.squad/routing.md`.\n\
- A thread with no reply after 48 hours is escalated to a human maintainer.\n- Answered questions that recur become FAQ entries.",
        evidence: "- A thread with no reply after 48 hours is escalated to a human maintainer.",
        question: "How long can a community question sit without an answer before a person steps in?",
    },
    Fact {
        owner: "troi",
        heading: "Blog post: v0.4.0 context reduction — numbers we can stand behind",
        body: "The draft quoted 70 % fewer tokens per spawn.\n\n- We only publish figures we reproduced on our own fixture; the 70 % came from one run.\n\
- The post now links the benchmark script and its input so readers can rerun it.\n- Screenshots replaced by text tables (accessible, searchable).",
        evidence: "- We only publish figures we reproduced on our own fixture; the 70 % came from one run.",
        question: "What is our rule about performance claims in announcements?",
    },
    Fact {
        owner: "troi",
        heading: "2026-03-19T16:05:00Z: Accessibility pass on the docs",
        body: "Ran axe and a screen reader over the top 20 pages.\n\n- Every diagram now has alt text that says what the diagram shows, not \"diagram\".\n\
- Code blocks got a visible language label.\n- Colour contrast of the callouts raised to 4.5:1.",
        evidence: "- Every diagram now has alt text that says what the diagram shows, not \"diagram\".",
        question: "What did we do about images for blind readers of the documentation?",
    },
    // ---- ralph: small history ----------------------------------------------------------------
    Fact {
        owner: "ralph",
        heading: "2026-04-20: Watch loop backs off when idle",
        body: "- The work monitor polls every 60 s while issues are open and every 15 minutes when the board is empty.\n\
- It never polls more than once per rate-limit window reset.",
        evidence: "- The work monitor polls every 60 s while issues are open and every 15 minutes when the board is empty.",
        question: "How often does the monitor check for new work when there is nothing to do?",
    },
    Fact {
        owner: "ralph",
        heading: "Stale issue sweep",
        body: "- Issues with no activity for 30 days get the `stale` label and a comment; closed after 14 more days.\n\
- Issues labelled `pinned` or `security` are never marked stale.",
        evidence: "- Issues labelled `pinned` or `security` are never marked stale.",
        question: "Which tickets are exempt from being automatically closed for inactivity?",
    },
    // ---- decisions.md ------------------------------------------------------------------------
    Fact {
        owner: "decisions",
        heading: "2026-03-14: Node 20 is the minimum runtime",
        body: "**By:** Data\n**What:** Drop Node 18; `engines.node` is `>=20`.\n**Why:** Node 18 left maintenance in April 2025 and `fetch` streaming differs.",
        evidence: "**What:** Drop Node 18; `engines.node` is `>=20`.",
        question: "What's the oldest version of Node we still support?",
    },
    Fact {
        owner: "decisions",
        heading: "Decisions are promoted, never edited in place",
        body: "**By:** Picard\n**What:** `decisions.md` changes only through the promotion flow; corrections are new entries that supersede old ones.\n**Why:** hand edits lost history twice and broke the merge driver.",
        evidence: "**What:** `decisions.md` changes only through the promotion flow; corrections are new entries that supersede old ones.",
        question: "If a recorded team decision is wrong, how should it be fixed?",
    },
    Fact {
        owner: "decisions",
        heading: "2026-02-01: Conventional commits for every PR title",
        body: "**By:** Troi\n**What:** PR titles follow Conventional Commits (`feat:`, `fix:`, `docs:` …); squash merges use the title.\n**Why:** the changelog is generated from them.",
        evidence: "**What:** PR titles follow Conventional Commits (`feat:`, `fix:`, `docs:` …); squash merges use the title.",
        question: "Is there a required format for naming pull requests?",
    },
    Fact {
        owner: "decisions",
        heading: "2025-10: One agent per issue at a time",
        body: "**By:** Ralph\n**What:** an issue is assigned to exactly one agent; a handoff is an explicit reassign with a note.\n**Why:** two agents on one issue produced conflicting PRs.\n**Scope:** team",
        evidence: "**What:** an issue is assigned to exactly one agent; a handoff is an explicit reassign with a note.",
        question: "Can two agents work the same ticket simultaneously?",
    },
    Fact {
        owner: "decisions",
        heading: "2026-04-05: Telemetry is opt-in",
        body: "**By:** Worf\n**What:** no usage data leaves a machine unless `SQUAD_TELEMETRY=1` is set.\n**Why:** users asked, and it is the only answer compatible with enterprise policies.",
        evidence: "**What:** no usage data leaves a machine unless `SQUAD_TELEMETRY=1` is set.",
        question: "Does the tool send usage statistics by default?",
    },
    Fact {
        owner: "decisions",
        heading: "Squash merge only",
        body: "**By:** Data\n**What:** the repository allows squash merges only; merge commits and rebase merges are disabled.\n**Why:** one commit per PR keeps `git bisect` and the changelog simple.",
        evidence: "**What:** the repository allows squash merges only; merge commits and rebase merges are disabled.",
        question: "What merge strategy is enabled for pull requests?",
    },
    Fact {
        owner: "decisions",
        heading: "2026-03-30: Memory files stay under 4 KB hot",
        body: "**By:** Scribe\n**What:** the hot memory file of an agent is capped at 4 KB; older material moves to cold.\n**Why:** every spawn loads hot; it must stay small.",
        evidence: "**What:** the hot memory file of an agent is capped at 4 KB; older material moves to cold.",
        question: "What's the size limit for an agent's always-loaded memory?",
    },
];

/// A question held out from tuning: asked about the sections of [`FACTS`], answered by one
/// line of one of them (not always the line [`FACTS`] asks about), phrased the way a user
/// would ask it (paraphrases, other words, other word forms).
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeldOut {
    /// The agent spawned to answer it.
    pub(crate) agent: &'static str,
    /// The question.
    pub(crate) question: &'static str,
    /// The line that answers it.
    pub(crate) evidence: &'static str,
}

/// Written before the retrieval was tuned, and not used to tune it: recall on these tells how
/// the ranking does on questions it was not shaped by.
pub(crate) const HELD_OUT: &[HeldOut] = &[
    HeldOut {
        agent: "data",
        question: "What safeguard stops us from publishing an npm release that has no built output?",
        evidence: "**Fix:** `prepublishOnly` now runs the build, and CI checks `npm pack --dry-run` lists `dist/cli.js`.",
    },
    HeldOut {
        agent: "data",
        question: "What does the tool do if I launch it somewhere that isn't inside a git checkout?",
        evidence: "- Outside a repository it stops at the filesystem root and prints a hint.",
    },
    HeldOut {
        agent: "data",
        question: "How much extra CI time did covering Windows cost us?",
        evidence: "- Added a `windows-latest` job to the test matrix — it adds ~4 minutes.",
    },
    HeldOut {
        agent: "data",
        question: "How much memory do we let the TypeScript compiler use on the build runners?",
        evidence: "- Raised the heap: `NODE_OPTIONS=--max-old-space-size=6144` in the build job only.",
    },
    HeldOut {
        agent: "data",
        question: "After bumping versions, what do I run so the package lock gets updated?",
        evidence: "2. Run `npm install` so the lockfile picks up the new workspace versions.",
    },
    HeldOut {
        agent: "data",
        question: "What function must every subcommand file expose?",
        evidence: "- Each command module exports `run(args, ctx)`; nothing runs at import time.",
    },
    HeldOut {
        agent: "data",
        question: "Can I preview what an upgrade would change without touching my files?",
        evidence: "- A dry run (`--dry-run`) prints the plan and writes nothing.",
    },
    HeldOut {
        agent: "data",
        question: "Does compacting a history still throw away entries that carry no date?",
        evidence: "- Undated entries are kept in place — they used to be dropped (#626).",
    },
    HeldOut {
        agent: "data",
        question: "How did we repair the mac init test that compared temporary directory paths?",
        evidence: "- **Fix:** compare `fs.realpathSync()` of both sides.",
    },
    HeldOut {
        agent: "data",
        question: "Why couldn't we simply re-release 0.8.24 after the bad tag?",
        evidence: "- The registry never lets a version be republished, so 0.8.25 was cut to ship the fix.",
    },
    HeldOut {
        agent: "worf",
        question: "How often is the bot's access token rotated?",
        evidence: "- The token lives in the `SQUAD_BOT_TOKEN` secret; rotation every 90 days.",
    },
    HeldOut {
        agent: "worf",
        question: "How are incoming webhook HMACs compared so timing attacks don't work?",
        evidence: "- `crypto.timingSafeEqual` on equal-length buffers; a length mismatch is rejected before comparing.",
    },
    HeldOut {
        agent: "worf",
        question: "Will a pull request that brings in a library with a serious vulnerability be blocked?",
        evidence: "- It fails on new dependencies with a known high or critical advisory.",
    },
    HeldOut {
        agent: "worf",
        question: "Can builds running for forked repositories write into our CI caches?",
        evidence: "- Nothing from a fork's job is ever saved to the shared cache.",
    },
    HeldOut {
        agent: "worf",
        question: "Is it fine for debugging output to dump the environment variables?",
        evidence: "- Debug logging never prints `process.env`; it prints the names of the variables only.",
    },
    HeldOut {
        agent: "worf",
        question: "Does the release bot have to sign its commits?",
        evidence: "- Bot commits are identified by the `squad-release[bot]` author and exempt.",
    },
    HeldOut {
        agent: "worf",
        question: "What does the poller do when GitHub answers 403 and says to retry later?",
        evidence: "- Polling interval is 30 s with jitter; on a 403 with `retry-after` we wait exactly that long.",
    },
    HeldOut {
        agent: "troi",
        question: "Do the old documentation links still work after the site migration?",
        evidence: "- Old URLs redirect through `public/_redirects`; 140 rules, generated once.",
    },
    HeldOut {
        agent: "troi",
        question: "How do we make sure the contributing instructions don't go stale?",
        evidence: "- The guide is tested: CI follows it in a fresh container every week.",
    },
    HeldOut {
        agent: "troi",
        question: "How should an agent structure its reply when it answers someone in an issue?",
        evidence: "- Lead with the answer, then the reasoning; no \"Great question!\".",
    },
    HeldOut {
        agent: "troi",
        question: "What contrast ratio do the callout boxes in the docs meet?",
        evidence: "- Colour contrast of the callouts raised to 4.5:1.",
    },
    HeldOut {
        agent: "troi",
        question: "Where is the schedule that says who handles the discussion threads each day?",
        evidence: "- Each weekday one agent owns triage; the rota is in `.squad/routing.md`.",
    },
    HeldOut {
        agent: "ralph",
        question: "How long does an inactive issue stay open before it gets closed?",
        evidence: "- Issues with no activity for 30 days get the `stale` label and a comment; closed after 14 more days.",
    },
    HeldOut {
        agent: "data",
        question: "Why did we stop supporting Node 18?",
        evidence: "**Why:** Node 18 left maintenance in April 2025 and `fetch` streaming differs.",
    },
    HeldOut {
        agent: "troi",
        question: "How do I turn on sending usage data?",
        evidence: "**What:** no usage data leaves a machine unless `SQUAD_TELEMETRY=1` is set.",
    },
    HeldOut {
        agent: "worf",
        question: "Why are merge commits turned off for our pull requests?",
        evidence: "**Why:** one commit per PR keeps `git bisect` and the changelog simple.",
    },
    HeldOut {
        agent: "data",
        question: "What are the changelog entries generated from?",
        evidence: "**Why:** the changelog is generated from them.",
    },
];
