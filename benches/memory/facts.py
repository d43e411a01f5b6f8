"""The hand-written sections of the corpus: each holds the line that answers one question,
asked in a user's words rather than the line's."""


def SQUADS(F):
    harbor_ada = [
        F("Upload retries never stopped in BlobStorageClient (#1412) (2026-04-11)",
          "**Problem:** a 502 from the storage front end made the upload loop forever.\n"
          "- Root cause: BlobStorageClient's retry policy had no cap when the server sent no Retry-After header.\n"
          "- Now capped at 6 tries with jittered backoff.\n\n**Fix:** PR #1412, released in 12.4.1."),
        F("2026-05-02: EventGrid subscription lagged behind the topic",
          "- Dead-lettered events piled up for an hour before anyone looked.\n"
          "- EventGrid delivery was throttled because the webhook answered in 9 s; the limit is 5 s.\n"
          "- The handler now acks first and processes on a queue."),
        F("Contoso.Extensions.Http stays on 4.2 (2026-03-20)",
          "**Context:** 4.3 changed the proxy defaults.\n"
          "- Contoso.Extensions.Http 4.3 ignores HTTPS_PROXY, so corporate users could not connect; we pin 4.2 until 4.3.1.\n"
          "- The pin lives in Directory.Packages.props."),
        F("2026-06-14 Emulator port clash", "- The storage emulator and the docs preview both wanted port 10000.\n"
          "- The emulator now starts on 10010 in CI; set AZURITE_BLOB_PORT locally to match.", level=2),
        F("Release checklist (2026-02-03)",
          "- Tag from main only.\n- Run the release tests on all three runners.\n"
          "- Update the changelog before the tag, never after.\n- The release notes must link every breaking change to its migration guide.\n"
          "- Announce in the team channel."),
    ]
    harbor_ben = [
        F("SAS token clock skew (2026-01-19)",
          "- Tokens minted on build agents failed for 5 minutes after creation.\n"
          "- SAS start times are now backdated by 15 minutes to absorb clock skew between agents and the service.\n"
          "- Never set the start time to now."),
        F("2026-04-28: lease-renewer thread leak",
          "**Problem:** long uploads leaked one thread per lease.\n"
          "- The lease-renewer was scheduled on a new timer per blob instead of the shared scheduler.\n"
          "- Memory fell from 1.1 GB to 140 MB after the fix."),
        F("## Runbook: storage account failover", "", level=2),
    ]
    # An undated `##` section right after a `###` section: its text is the evidence.
    harbor_ben[-1] = F("Runbook: storage account failover",
                        "Failover is manual: run `az storage account failover` only after the status page confirms a regional outage.\n"
                        "Expect up to an hour of write unavailability.", level=2)
    harbor_cyd = [
        F("API review notes (#1377)",
          "- Reviewers asked for async overloads on every public method.\n"
          "- Method names ending in Async return Task, never ValueTask, in the public surface."),
    ]
    harbor_dec = [
        F("2026-03-02: Samples compile in CI", "**By:** Mara\n**What:** every sample project builds in the PR pipeline.\n**Why:** three releases shipped samples that did not compile."),
        F("2026-05-09: ServiceBusSender batches by size", "**By:** Kofi\n**What:** ServiceBusSender batches are cut at 256 KB, never by message count.\n**Why:** count-based batches broke on large messages."),
    ]
    harbor_q = [
        ("ada", "Why did the Blob Storage Client keep retrying the upload forever?",
         "- Root cause: BlobStorageClient's retry policy had no cap when the server sent no Retry-After header."),
        ("ada", "What slowed down Event Grid deliveries in May?",
         "- EventGrid delivery was throttled because the webhook answered in 9 s; the limit is 5 s."),
        ("ada", "Which contoso extensions http version do we pin and why?",
         "- Contoso.Extensions.Http 4.3 ignores HTTPS_PROXY, so corporate users could not connect; we pin 4.2 until 4.3.1."),
        ("ada", "Which port does the emulator use on CI?",
         "- The emulator now starts on 10010 in CI; set AZURITE_BLOB_PORT locally to match."),
        ("ada", "What must the release notes contain for breaking changes?",
         "- The release notes must link every breaking change to its migration guide."),
        ("ben", "Why did freshly minted shared access signatures fail right away?",
         "- SAS start times are now backdated by 15 minutes to absorb clock skew between agents and the service."),
        ("ben", "What caused the thread leak during long uploads?",
         "- The lease-renewer was scheduled on a new timer per blob instead of the shared scheduler."),
        ("ben", "When may we fail over a storage account?",
         "Failover is manual: run `az storage account failover` only after the status page confirms a regional outage."),
        ("cyd", "Should public async methods return ValueTask?",
         "- Method names ending in Async return Task, never ValueTask, in the public surface."),
        ("ada", "Do samples have to compile before merging?",
         "**What:** every sample project builds in the PR pipeline."),
        ("ben", "How does the service bus sender decide batch boundaries?",
         "**What:** ServiceBusSender batches are cut at 256 KB, never by message count."),
    ]

    lantern_dev = [
        F("2026-04-01 Checkout page timeout", "- The checkout page hung for 30 s when the tax service was down.\n"
          "- The tax call now has a 3 s timeout and the page falls back to an estimated tax line.", level=2),
        F("useCartTotals re-render storm (#2210) (2026-02-17)",
          "**Problem:** every keystroke in the coupon box re-rendered the whole cart.\n"
          "- useCartTotals returned a new object each render; it is now memoized on the line items' ids.\n"
          "- React Profiler showed 140 renders per keystroke before, 3 after."),
        F("2026-05-21: feature-flag-service outage",
          "- The feature-flag-service returned 500s for 20 minutes.\n"
          "- Flags now default to their last cached value for 24 hours when the service is unreachable.\n"
          "- Before, every flag fell back to off and hid the checkout button."),
        F("Dark-mode contrast (2026-03-09)",
          "- The a11y audit failed PriceBadge in dark mode.\n"
          "- PriceBadge text uses token color.text.strong on color.surface.raised, which reaches 7:1."),
        F("Safari date parsing", "- `new Date('2026-03-09 10:00')` is Invalid Date on Safari.\n"
          "- Always parse with `parseISO` from date-fns; never hand a space-separated string to Date."),
    ]
    lantern_eve = [
        F("2026-01-30: Storybook build ran out of memory",
          "- The Storybook build died at 4 GB after the icon set grew to 2,400 SVGs.\n"
          "- Icons are now loaded through one sprite sheet instead of 2,400 imports."),
        F("i18n catalog keys (2026-06-02)",
          "- Missing keys rendered as raw ids in production.\n"
          "- The build now fails when a key exists in en-US and not in the other nine locales."),
        F("2026-07-11 Service worker served a stale bundle", "- After the July release users kept the old bundle for days.\n"
          "- The service worker now calls skipWaiting and reloads open tabs once the new version activates.", level=2),
    ]
    lantern_dec = [
        F("2026-02-10: Images go through the CDN resizer", "**By:** Ines\n**What:** every product image URL goes through the CDN resizer with width buckets of 320, 640 and 1280.\n**Why:** raw uploads were 4 MB each."),
        F("2026-04-22: e2e suite runs on two browsers", "**By:** Lee\n**What:** the e2e suite runs on Chromium and WebKit on every PR; Firefox nightly only.\n**Why:** Safari bugs reached production twice."),
    ]
    lantern_q = [
        ("dev", "What happens on the checkout page when the tax service is down?",
         "- The tax call now has a 3 s timeout and the page falls back to an estimated tax line."),
        ("dev", "Why did typing a coupon code make the cart slow?",
         "- useCartTotals returned a new object each render; it is now memoized on the line items' ids."),
        ("dev", "What do flags do when the feature flag service cannot be reached?",
         "- Flags now default to their last cached value for 24 hours when the service is unreachable."),
        ("dev", "Which colors make the price badge pass contrast in dark mode?",
         "- PriceBadge text uses token color.text.strong on color.surface.raised, which reaches 7:1."),
        ("dev", "How should we parse date strings so Safari works?",
         "- Always parse with `parseISO` from date-fns; never hand a space-separated string to Date."),
        ("eve", "Why did Storybook crash while building and what fixed it?",
         "- Icons are now loaded through one sprite sheet instead of 2,400 imports."),
        ("eve", "What stops untranslated strings from shipping?",
         "- The build now fails when a key exists in en-US and not in the other nine locales."),
        ("eve", "Why did people keep getting the old JavaScript bundle after the July release?",
         "- The service worker now calls skipWaiting and reloads open tabs once the new version activates."),
        ("dev", "What widths does the image resizer produce?",
         "**What:** every product image URL goes through the CDN resizer with width buckets of 320, 640 and 1280."),
        ("eve", "Which browsers does the end to end suite run on for pull requests?",
         "**What:** the e2e suite runs on Chromium and WebKit on every PR; Firefox nightly only."),
    ]

    quarry_fay = [
        F("2026-03-03: nightly_ingest ran past its window",
          "- The nightly_ingest job took 7 hours after orders doubled.\n"
          "- It now reads only partitions changed since the last watermark instead of the full day."),
        F("Duplicate orders in orders_daily (#3301) (2026-04-15)",
          "**Problem:** the CDC connector replays events after a restart.\n"
          "- The dedupe stage keys on (order_id, updated_at) and keeps the latest row per key.\n"
          "- 0.4 % of rows were duplicates before."),
        F("2026-05-30 Warehouse bill doubled", "- Ad-hoc queries scanned customer_dim without a partition filter.\n"
          "- The warehouse now rejects queries on tables over 1 TB that have no partition predicate.", level=2),
        F("Late data window (2026-02-08)",
          "- Events arriving up to 72 hours late are merged into their original day's partition; later ones go to a corrections table."),
        F("dq_checks thresholds",
          "- The row-count monitor alerts when a day's rows drop more than 30 % below the trailing 7-day median."),
    ]
    quarry_gus = [
        F("2026-06-19: Parquet writer produced tiny files",
          "- Each Spark task wrote its own file: 40,000 files of 50 KB per day.\n"
          "- Output is now coalesced to files of about 256 MB before writing."),
        F("S3 lifecycle rule (2026-01-05)",
          "- Raw landing files move to Glacier after 90 days and are deleted after 400 days; curated tables are never expired."),
        F("Schema registry compatibility",
          "- A producer dropped a field and broke three consumers.\n"
          "- The schema registry is set to BACKWARD_TRANSITIVE for every topic; FULL for the payments topics."),
    ]
    quarry_dec = [
        F("2026-03-18: Backfills run on the backfill runner only", "**By:** Tomás\n**What:** backfills longer than one day go through the backfill runner with a 4-worker cap.\n**Why:** a manual backfill starved the nightly jobs."),
        F("2026-06-01: customer_dim is SCD type 2", "**By:** Ines\n**What:** customer_dim keeps history as SCD type 2 with valid_from and valid_to columns.\n**Why:** finance needs addresses as they were at order time."),
    ]
    quarry_q = [
        ("fay", "Why did the nightly ingest take too long and what changed?",
         "- It now reads only partitions changed since the last watermark instead of the full day."),
        ("fay", "How do we remove duplicate orders that the change data capture replays?",
         "- The dedupe stage keys on (order_id, updated_at) and keeps the latest row per key."),
        ("fay", "What guards against expensive warehouse queries now?",
         "- The warehouse now rejects queries on tables over 1 TB that have no partition predicate."),
        ("fay", "How late can an event arrive and still land in its day?",
         "- Events arriving up to 72 hours late are merged into their original day's partition; later ones go to a corrections table."),
        ("fay", "When does the row count monitor alert?",
         "- The row-count monitor alerts when a day's rows drop more than 30 % below the trailing 7-day median."),
        ("gus", "Why were there so many small parquet files and what size do we aim for?",
         "- Output is now coalesced to files of about 256 MB before writing."),
        ("gus", "How long do we keep raw landing files in S3?",
         "- Raw landing files move to Glacier after 90 days and are deleted after 400 days; curated tables are never expired."),
        ("gus", "Which compatibility mode does the schema registry use?",
         "- The schema registry is set to BACKWARD_TRANSITIVE for every topic; FULL for the payments topics."),
        ("fay", "Who can run a multi-day backfill and how?",
         "**What:** backfills longer than one day go through the backfill runner with a 4-worker cap."),
        ("gus", "How does the customer dimension keep address history?",
         "**What:** customer_dim keeps history as SCD type 2 with valid_from and valid_to columns."),
    ]
    return [
        ("harbor", [("ada", harbor_ada, 33000, "newest_last"), ("ben", harbor_ben, 21000, "crlf"),
                    ("cyd", harbor_cyd, 5000, "newest_first")], harbor_dec, 11000, harbor_q),
        ("lantern", [("dev", lantern_dev, 28000, "newest_first"), ("eve", lantern_eve, 16000, "newest_last")],
         lantern_dec, 9000, lantern_q),
        ("quarry", [("fay", quarry_fay, 30000, "crlf"), ("gus", quarry_gus, 19000, "newest_last")],
         quarry_dec, 13000, quarry_q),
    ]
