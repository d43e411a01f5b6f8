//! A small GitHub REST emulator on wiremock: issues, comments (with `since`, pagination and
//! `Link`), issue events, labels, collaborator permissions and users, answering with the shapes of
//! GitHub's real payloads, ETags and `If-None-Match` → 304, and a count of non-304 answers.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use squad_model::Timestamp;
use squad_notify::Clock;
use squad_notify::github::{GithubClient, GithubConfig, Token};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The owner of the emulated repository.
pub const OWNER: &str = "acme";
/// The name of the emulated repository.
pub const REPO: &str = "widgets";
/// The squad's own account (the token's user, author of the issues it opens).
pub const SQUAD: &str = "squad-bot";
/// The registered approver, an admin of the repository.
pub const APPROVER: &str = "octocat";
/// The only token the emulator accepts; tests use it as the privacy canary too.
pub const TOKEN: &str = "ghp_testTOKEN0123456789abcdef";
/// Where the simulated clock starts, in seconds since the epoch (2026-11-30T10:00:00Z).
pub const T0: i64 = 1_795_860_000;

/// A GitHub account.
#[derive(Debug, Clone)]
pub struct UserRec {
    /// Its login.
    pub login: String,
    /// Its numeric id.
    pub id: u64,
    /// `User` or `Bot`.
    pub kind: &'static str,
}

/// An issue of the repository.
#[derive(Debug, Clone)]
pub struct IssueRec {
    /// Its number.
    pub number: u64,
    /// Its title.
    pub title: String,
    /// Its body.
    pub body: String,
    /// The login of its author.
    pub user: String,
    /// `open` or `closed`.
    pub state: String,
    /// Why it was closed (`completed`, `not_planned`).
    pub state_reason: Option<String>,
    /// Its labels.
    pub labels: Vec<String>,
    /// The logins it is assigned to.
    pub assignees: Vec<String>,
    /// When it was opened (seconds since the epoch).
    pub created: i64,
    /// When it last changed (seconds since the epoch).
    pub updated: i64,
}

/// A comment on an issue.
#[derive(Debug, Clone)]
pub struct CommentRec {
    /// Its id.
    pub id: u64,
    /// The issue it is on.
    pub issue: u64,
    /// The login of its author.
    pub user: String,
    /// Its body.
    pub body: String,
    /// When it was written (seconds since the epoch).
    pub created: i64,
    /// When it was last edited (seconds since the epoch).
    pub updated: i64,
}

/// An issue event (only `labeled` is emulated).
#[derive(Debug, Clone)]
pub struct EventRec {
    /// Its id.
    pub id: u64,
    /// The issue it happened on.
    pub issue: u64,
    /// What happened (`labeled`).
    pub event: String,
    /// Who did it.
    pub actor: String,
    /// The label added, for `labeled`.
    pub label: Option<String>,
    /// When (seconds since the epoch).
    pub created: i64,
}

/// Everything the emulated GitHub holds, and what it was asked.
#[derive(Debug, Default)]
pub struct State {
    /// The accounts, by login.
    pub users: BTreeMap<String, UserRec>,
    /// The repository's collaborators: login -> (permission, role_name).
    pub roles: HashMap<String, (String, String)>,
    /// The issues, by number.
    pub issues: BTreeMap<u64, IssueRec>,
    /// Every comment, in the order written.
    pub comments: Vec<CommentRec>,
    /// Every issue event, in order.
    pub events: Vec<EventRec>,
    /// The last id handed out.
    pub next_id: u64,
    /// How many requests arrived.
    pub requests: u64,
    /// How many requests were answered with something other than 304 Not Modified (the ones
    /// GitHub counts against the rate limit).
    pub non_304: u64,
    /// One line per request: method, URL and the simulated time in milliseconds.
    pub log: Vec<String>,
    /// When each write (any method but GET) arrived, on the real monotonic clock.
    pub write_times: Vec<std::time::Instant>,
    /// Canned answers served (once each) before the emulator, for paths containing the key.
    pub faults: VecDeque<(String, ResponseTemplate)>,
}

/// Simulated time shared by the emulator and the client's clock (milliseconds since the epoch).
#[derive(Debug, Clone)]
pub struct SimClock {
    /// The simulated time, in milliseconds since the epoch.
    pub millis: Arc<AtomicI64>,
    /// Every pause taken through [`SimClock::sleep`], in order.
    pub sleeps: Arc<Mutex<Vec<Duration>>>,
}

impl SimClock {
    /// The simulated time in whole seconds since the epoch.
    pub fn secs(&self) -> i64 {
        self.millis.load(Ordering::SeqCst) / 1000
    }

    /// Moves the simulated time forward by `secs` seconds.
    pub fn advance(&self, secs: i64) {
        self.millis.fetch_add(secs * 1000, Ordering::SeqCst);
    }
}

impl Clock for SimClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_unix_millis(self.millis.load(Ordering::SeqCst)).unwrap()
    }
}

impl SimClock {
    /// What a host does with a pause: here, move the simulated time and note the pause.
    pub fn sleep(&self, duration: Duration) {
        self.sleeps.lock().unwrap().push(duration);
        self.millis.fetch_add(
            i64::try_from(duration.as_millis()).unwrap(),
            Ordering::SeqCst,
        );
    }
}

/// The emulated GitHub: a wiremock server answering the REST API from [`State`], on the
/// simulated [`SimClock`].
#[derive(Debug)]
pub struct Emulator {
    /// The server (its `uri()` is the API base).
    pub server: MockServer,
    /// What it holds.
    pub state: Arc<Mutex<State>>,
    /// Its clock, shared with the clients it builds.
    pub clock: SimClock,
}

struct Responder {
    state: Arc<Mutex<State>>,
    clock: SimClock,
    base: String,
}

fn ts(secs: i64) -> String {
    Timestamp::from_unix_seconds(secs).unwrap().to_string()
}

fn etag_of(body: &str) -> String {
    // FNV-1a: stable across runs, like GitHub's body-derived weak ETags.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in body.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("W/\"{h:016x}\"")
}

impl State {
    /// Adds the account `login` of `kind` (`User`, `Bot`) if it is new; returns its id.
    pub fn user(&mut self, login: &str, kind: &'static str) -> u64 {
        if let Some(u) = self.users.get(login) {
            return u.id;
        }
        let id = 1000 + self.users.len() as u64;
        self.users.insert(
            login.to_owned(),
            UserRec {
                login: login.to_owned(),
                id,
                kind,
            },
        );
        id
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The account as GitHub's API shows it.
    pub fn user_json(&self, login: &str) -> Value {
        let u = &self.users[login];
        let api = "https://api.github.com/users";
        json!({
            "login": u.login, "id": u.id, "node_id": format!("MDQ6VXNlcj{}", u.id),
            "avatar_url": format!("https://avatars.githubusercontent.com/u/{}?v=4", u.id),
            "gravatar_id": "", "url": format!("{api}/{}", u.login),
            "html_url": format!("https://github.com/{}", u.login),
            "followers_url": format!("{api}/{}/followers", u.login),
            "following_url": format!("{api}/{}/following{{/other_user}}", u.login),
            "gists_url": format!("{api}/{}/gists{{/gist_id}}", u.login),
            "starred_url": format!("{api}/{}/starred{{/owner}}{{/repo}}", u.login),
            "subscriptions_url": format!("{api}/{}/subscriptions", u.login),
            "organizations_url": format!("{api}/{}/orgs", u.login),
            "repos_url": format!("{api}/{}/repos", u.login),
            "events_url": format!("{api}/{}/events{{/privacy}}", u.login),
            "received_events_url": format!("{api}/{}/received_events", u.login),
            "type": u.kind, "user_view_type": "public", "site_admin": false
        })
    }

    fn label_json(name: &str) -> Value {
        json!({
            "id": 208045946, "node_id": "MDU6TGFiZWwyMDgwNDU5NDY=",
            "url": format!("https://api.github.com/repos/{OWNER}/{REPO}/labels/{name}"),
            "name": name, "description": null, "color": "ededed", "default": false
        })
    }

    fn issue_json(&self, i: &IssueRec) -> Value {
        let url = format!(
            "https://api.github.com/repos/{OWNER}/{REPO}/issues/{}",
            i.number
        );
        let comments = self.comments.iter().filter(|c| c.issue == i.number).count();
        json!({
            "url": url, "repository_url": format!("https://api.github.com/repos/{OWNER}/{REPO}"),
            "labels_url": format!("{url}/labels{{/name}}"), "comments_url": format!("{url}/comments"),
            "events_url": format!("{url}/events"),
            "html_url": format!("https://github.com/{OWNER}/{REPO}/issues/{}", i.number),
            "id": 2_000_000 + i.number, "node_id": format!("I_kwDOA{}", i.number), "number": i.number,
            "title": i.title, "user": self.user_json(&i.user),
            "labels": i.labels.iter().map(|l| Self::label_json(l)).collect::<Vec<_>>(),
            "state": i.state, "locked": false,
            "assignee": i.assignees.first().map(|a| self.user_json(a)),
            "assignees": i.assignees.iter().map(|a| self.user_json(a)).collect::<Vec<_>>(),
            "milestone": null, "comments": comments,
            "created_at": ts(i.created), "updated_at": ts(i.updated),
            "closed_at": if i.state == "closed" { json!(ts(i.updated)) } else { Value::Null },
            "author_association": "OWNER", "active_lock_reason": null, "body": i.body,
            "reactions": {"url": format!("{url}/reactions"), "total_count": 0, "+1": 0, "-1": 0,
                "laugh": 0, "hooray": 0, "confused": 0, "heart": 0, "rocket": 0, "eyes": 0},
            "timeline_url": format!("{url}/timeline"), "performed_via_github_app": null,
            "state_reason": i.state_reason
        })
    }

    fn association(&self, login: &str) -> &'static str {
        match self.roles.get(login).map(|(_, r)| r.as_str()) {
            Some("admin") => "OWNER",
            Some(_) => "COLLABORATOR",
            None => "NONE",
        }
    }

    fn comment_json(&self, c: &CommentRec) -> Value {
        let url = format!(
            "https://api.github.com/repos/{OWNER}/{REPO}/issues/comments/{}",
            c.id
        );
        json!({
            "url": url,
            "html_url": format!("https://github.com/{OWNER}/{REPO}/issues/{}#issuecomment-{}", c.issue, c.id),
            "issue_url": format!("https://api.github.com/repos/{OWNER}/{REPO}/issues/{}", c.issue),
            "id": c.id, "node_id": format!("IC_kwDOA{}", c.id), "user": self.user_json(&c.user),
            "created_at": ts(c.created), "updated_at": ts(c.updated),
            "author_association": self.association(&c.user), "body": c.body,
            "reactions": {"url": format!("{url}/reactions"), "total_count": 0, "+1": 0, "-1": 0,
                "laugh": 0, "hooray": 0, "confused": 0, "heart": 0, "rocket": 0, "eyes": 0},
            "performed_via_github_app": null
        })
    }

    fn event_json(&self, e: &EventRec) -> Value {
        let mut v = json!({
            "id": e.id, "node_id": format!("LE_lADOA{}", e.id),
            "url": format!("https://api.github.com/repos/{OWNER}/{REPO}/issues/events/{}", e.id),
            "actor": self.user_json(&e.actor), "event": e.event, "commit_id": null,
            "commit_url": null, "created_at": ts(e.created), "performed_via_github_app": null
        });
        if let Some(l) = &e.label {
            v["label"] = json!({"name": l, "color": "ededed"});
        }
        v
    }

    /// Adds a comment by `user` on issue `issue`; returns its id.
    pub fn add_comment(&mut self, issue: u64, user: &str, body: &str, created: i64) -> u64 {
        let id = 1_500_000_000 + self.id();
        self.comments.push(CommentRec {
            id,
            issue,
            user: user.to_owned(),
            body: body.to_owned(),
            created,
            updated: created,
        });
        id
    }

    /// Edits comment `id` at `at` (seconds since the epoch).
    pub fn edit_comment(&mut self, id: u64, body: &str, at: i64) {
        let c = self.comments.iter_mut().find(|c| c.id == id).unwrap();
        c.body = body.to_owned();
        c.updated = at;
    }

    /// Adds `label` to issue `issue` as `actor` would, with its `labeled` event.
    pub fn add_label(&mut self, issue: u64, actor: &str, label: &str, at: i64) {
        let id = 9_000_000_000 + self.id();
        let i = self.issues.get_mut(&issue).unwrap();
        if !i.labels.iter().any(|l| l == label) {
            i.labels.push(label.to_owned());
        }
        i.updated = at;
        self.events.push(EventRec {
            id,
            issue,
            event: "labeled".into(),
            actor: actor.to_owned(),
            label: Some(label.to_owned()),
            created: at,
        });
    }

    /// Issue `n` (panics if there is none).
    pub fn issue(&self, n: u64) -> IssueRec {
        self.issues[&n].clone()
    }

    /// The comments on issue `n`, in the order written.
    pub fn comments_on(&self, n: u64) -> Vec<CommentRec> {
        self.comments
            .iter()
            .filter(|c| c.issue == n)
            .cloned()
            .collect()
    }
}

fn q(req: &Request, key: &str) -> Option<String> {
    req.url
        .query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

fn err(status: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({
        "message": message,
        "documentation_url": "https://docs.github.com/rest",
        "status": status.to_string()
    }))
}

impl Responder {
    fn page<T: Clone>(&self, req: &Request, items: Vec<T>) -> (Vec<T>, Option<String>) {
        let per_page: usize = q(req, "per_page")
            .and_then(|v| v.parse().ok())
            .unwrap_or(30);
        let page: usize = q(req, "page").and_then(|v| v.parse().ok()).unwrap_or(1);
        let start = (page - 1) * per_page;
        let slice: Vec<T> = items.iter().skip(start).take(per_page).cloned().collect();
        let last = items.len().div_ceil(per_page).max(1);
        let link = (page < last).then(|| {
            let mut next = req.url.clone();
            let pairs: Vec<(String, String)> = req
                .url
                .query_pairs()
                .filter(|(k, _)| k != "page")
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            next.query_pairs_mut()
                .clear()
                .extend_pairs(pairs)
                .append_pair("page", &(page + 1).to_string());
            let next = format!("{}{}?{}", self.base, next.path(), next.query().unwrap());
            let mut lastu = next.clone();
            lastu = lastu.replace(&format!("page={}", page + 1), &format!("page={last}"));
            format!("<{next}>; rel=\"next\", <{lastu}>; rel=\"last\"")
        });
        (slice, link)
    }

    fn handle(&self, req: &Request, s: &mut State) -> (ResponseTemplate, Option<String>) {
        let now = self.clock.secs();
        let auth = req
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if auth != format!("Bearer {TOKEN}") {
            return (err(401, "Bad credentials"), None);
        }
        let path = req.url.path().trim_start_matches("/api/v3").to_owned();
        let seg: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let method = req.method.as_str();
        let repo_ok = seg.len() >= 3 && seg[0] == "repos" && seg[1] == OWNER && seg[2] == REPO;
        let json_ok = |v: Value| (Some(v), None::<String>);
        let (body, link): (Option<Value>, Option<String>) = match (method, seg.as_slice()) {
            ("GET", ["user"]) => json_ok(s.user_json(SQUAD)),
            ("GET", ["users", login]) => match s.users.get(*login) {
                Some(_) => json_ok(s.user_json(login)),
                None => return (err(404, "Not Found"), None),
            },
            _ if !repo_ok => return (err(404, "Not Found"), None),
            ("GET", [_, _, _, "issues"]) => {
                let label = q(req, "labels");
                let creator = q(req, "creator");
                let state = q(req, "state").unwrap_or_else(|| "open".into());
                let list: Vec<Value> = s
                    .issues
                    .values()
                    .rev()
                    .filter(|i| state == "all" || i.state == state)
                    .filter(|i| label.as_ref().is_none_or(|l| i.labels.contains(l)))
                    .filter(|i| creator.as_ref().is_none_or(|c| &i.user == c))
                    .map(|i| s.issue_json(i))
                    .collect();
                let (p, link) = self.page(req, list);
                (Some(Value::Array(p)), link)
            }
            ("POST", [_, _, _, "issues"]) => {
                let b: Value = req.body_json().unwrap();
                let number = s.issues.keys().max().copied().unwrap_or(0) + 1;
                let assignees: Vec<String> = b["assignees"]
                    .as_array()
                    .map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
                    .unwrap_or_default();
                if assignees.iter().any(|a| !s.roles.contains_key(a)) {
                    return (err(422, "Validation Failed"), None);
                }
                let labels: Vec<String> = b["labels"]
                    .as_array()
                    .map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
                    .unwrap_or_default();
                let rec = IssueRec {
                    number,
                    title: b["title"].as_str().unwrap().to_owned(),
                    body: b["body"].as_str().unwrap_or_default().to_owned(),
                    user: SQUAD.to_owned(),
                    state: "open".into(),
                    state_reason: None,
                    labels: Vec::new(),
                    assignees,
                    created: now,
                    updated: now,
                };
                s.issues.insert(number, rec);
                for l in labels {
                    s.add_label(number, SQUAD, &l, now);
                }
                let json = s.issue_json(&s.issues[&number]);
                return (ResponseTemplate::new(201).set_body_json(json), None);
            }
            ("GET", [_, _, _, "issues", "comments", id]) => {
                let id: u64 = id.parse().unwrap();
                match s.comments.iter().find(|c| c.id == id) {
                    Some(c) => json_ok(s.comment_json(c)),
                    None => return (err(404, "Not Found"), None),
                }
            }
            ("GET", [_, _, _, "issues", n]) => match s.issues.get(&n.parse().unwrap()) {
                Some(i) => json_ok(s.issue_json(i)),
                None => return (err(404, "Not Found"), None),
            },
            ("PATCH", [_, _, _, "issues", n]) => {
                let n: u64 = n.parse().unwrap();
                let b: Value = req.body_json().unwrap();
                let roles = s.roles.clone();
                let i = s.issues.get_mut(&n).unwrap();
                for (k, slot) in [("title", &mut i.title), ("body", &mut i.body)] {
                    if let Some(v) = b[k].as_str() {
                        *slot = v.to_owned();
                    }
                }
                if let Some(v) = b["state"].as_str() {
                    i.state = v.to_owned();
                }
                if let Some(v) = b["state_reason"].as_str() {
                    i.state_reason = Some(v.to_owned());
                }
                if let Some(a) = b["labels"].as_array() {
                    i.labels = a.iter().map(|v| v.as_str().unwrap().to_owned()).collect();
                }
                if let Some(a) = b["assignees"].as_array() {
                    let wanted: Vec<String> =
                        a.iter().map(|v| v.as_str().unwrap().to_owned()).collect();
                    if wanted.iter().any(|a| !roles.contains_key(a)) {
                        return (err(422, "Validation Failed"), None);
                    }
                    i.assignees = wanted;
                }
                i.updated = now;
                json_ok(s.issue_json(&s.issues[&n]))
            }
            ("GET", [_, _, _, "issues", n, "comments"]) => {
                let n: u64 = n.parse().unwrap();
                let since = q(req, "since").map(|v| Timestamp::parse(&v).unwrap().unix_seconds());
                let mut list: Vec<CommentRec> = s
                    .comments
                    .iter()
                    // Strictly after `since`, the stricter reading of GitHub's docs.
                    .filter(|c| c.issue == n && since.is_none_or(|t| c.updated > t))
                    .cloned()
                    .collect();
                list.sort_by_key(|c| (c.created, c.id));
                let (p, link) = self.page(req, list);
                (
                    Some(Value::Array(p.iter().map(|c| s.comment_json(c)).collect())),
                    link,
                )
            }
            ("POST", [_, _, _, "issues", n, "comments"]) => {
                let n: u64 = n.parse().unwrap();
                let b: Value = req.body_json().unwrap();
                let id = s.add_comment(n, SQUAD, b["body"].as_str().unwrap(), now);
                let c = s.comments.iter().find(|c| c.id == id).unwrap().clone();
                return (
                    ResponseTemplate::new(201).set_body_json(s.comment_json(&c)),
                    None,
                );
            }
            ("GET", [_, _, _, "issues", n, "events"]) => {
                let n: u64 = n.parse().unwrap();
                let list: Vec<EventRec> =
                    s.events.iter().filter(|e| e.issue == n).cloned().collect();
                let (p, link) = self.page(req, list);
                (
                    Some(Value::Array(p.iter().map(|e| s.event_json(e)).collect())),
                    link,
                )
            }
            ("PUT", [_, _, _, "issues", n, "labels"]) => {
                let n: u64 = n.parse().unwrap();
                let b: Value = req.body_json().unwrap();
                let labels: Vec<String> = b["labels"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_owned())
                    .collect();
                let old = s.issues[&n].labels.clone();
                s.issues.get_mut(&n).unwrap().labels.clear();
                for l in &labels {
                    if !old.contains(l) {
                        s.add_label(n, SQUAD, l, now);
                    } else {
                        s.issues.get_mut(&n).unwrap().labels.push(l.clone());
                    }
                }
                let out: Vec<Value> = labels.iter().map(|l| State::label_json(l)).collect();
                json_ok(Value::Array(out))
            }
            ("GET", [_, _, _, "collaborators", login, "permission"]) => match s.roles.get(*login) {
                Some((perm, role)) => json_ok(json!({
                    "permission": perm, "role_name": role, "user": s.user_json(login)
                })),
                None => return (err(404, "Not Found"), None),
            },
            _ => return (err(404, "Not Found"), None),
        };
        let text = body.map(|b| b.to_string()).unwrap_or_default();
        let etag = etag_of(&text);
        let mut t = ResponseTemplate::new(200)
            .insert_header("content-type", "application/json; charset=utf-8")
            .insert_header("etag", etag.as_str());
        if let Some(l) = link {
            t = t.insert_header("link", l.as_str());
        }
        (t.set_body_string(text), Some(etag))
    }
}

impl Respond for Responder {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let mut s = self.state.lock().unwrap();
        s.requests += 1;
        if req.method.as_str() != "GET" {
            s.write_times.push(std::time::Instant::now());
        }
        s.log.push(format!(
            "{} {} @{}",
            req.method,
            req.url,
            self.clock.millis.load(Ordering::SeqCst)
        ));
        let path = req.url.as_str().to_owned();
        if let Some(pos) = s.faults.iter().position(|(k, _)| path.contains(k.as_str())) {
            let (_, t) = s.faults.remove(pos).unwrap();
            s.non_304 += 1;
            return t;
        }
        let (template, etag) = self.handle(req, &mut s);
        let inm = req
            .headers
            .get("if-none-match")
            .and_then(|v| v.to_str().ok());
        let reset = (self.clock.secs() / 3600 + 1) * 3600;
        let headers = [
            ("x-ratelimit-limit", "5000".to_owned()),
            ("x-ratelimit-remaining", "4999".to_owned()),
            ("x-ratelimit-reset", reset.to_string()),
            ("x-github-request-id", "C0DE:1234:5678:9ABC:0000".to_owned()),
        ];
        if let Some(etag) = etag.filter(|e| req.method.as_str() == "GET" && inm == Some(e)) {
            let mut t = ResponseTemplate::new(304).insert_header("etag", etag.as_str());
            for (k, v) in headers {
                t = t.insert_header(k, v.as_str());
            }
            return t;
        }
        s.non_304 += 1;
        let mut t = template;
        for (k, v) in headers {
            t = t.insert_header(k, v.as_str());
        }
        t
    }
}

impl Emulator {
    /// An emulator; its API also answers under `/api/v3` (the GitHub Enterprise layout).
    pub async fn start() -> Self {
        let server = MockServer::start().await;
        let clock = SimClock {
            millis: Arc::new(AtomicI64::new(T0 * 1000)),
            sleeps: Arc::default(),
        };
        let state = Arc::new(Mutex::new(State::default()));
        {
            let mut s = state.lock().unwrap();
            s.user(SQUAD, "User");
            s.user(APPROVER, "User");
            s.roles
                .insert(APPROVER.into(), ("admin".into(), "admin".into()));
            s.roles
                .insert(SQUAD.into(), ("write".into(), "write".into()));
        }
        Mock::given(wiremock::matchers::any())
            .respond_with(Responder {
                state: state.clone(),
                clock: clock.clone(),
                base: server.uri(),
            })
            .mount(&server)
            .await;
        Self {
            server,
            state,
            clock,
        }
    }

    /// A client of the emulated repository with [`APPROVER`] as the approver.
    pub fn client(&self) -> GithubClient {
        self.client_with(GithubConfig::new(&format!("{OWNER}/{REPO}"), APPROVER).unwrap())
    }

    /// A client with `config`, pointed at the emulator, on its clock, with no spacing between
    /// writes.
    pub fn client_with(&self, config: GithubConfig) -> GithubClient {
        let config = config
            .with_api_base(&self.server.uri())
            .unwrap()
            .with_own_login(SQUAD)
            .unwrap();
        GithubClient::new(config, Token::new(TOKEN.to_owned()).unwrap())
            .unwrap()
            .with_clock(Arc::new(self.clock.clone()))
            // Writes are paced on the real clock; these tests pace nothing but the one that
            // checks the pacing.
            .with_write_spacing(Duration::ZERO)
    }

    /// The state, locked.
    pub fn s(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// Adds a user with a repository role (`None`: not a collaborator).
    pub fn person(&self, login: &str, role: Option<(&str, &str)>) {
        let mut s = self.s();
        s.user(login, "User");
        if let Some((perm, role)) = role {
            s.roles.insert(login.into(), (perm.into(), role.into()));
        }
    }

    /// Adds a bot account.
    pub fn bot(&self, login: &str) {
        self.s().user(login, "Bot");
    }

    /// Answers the next request whose URL contains `path_part` with `template` (once) instead
    /// of the emulator.
    pub fn fault(&self, path_part: &str, template: ResponseTemplate) {
        self.s().faults.push_back((path_part.to_owned(), template));
    }

    /// The simulated time in seconds since the epoch.
    pub fn now(&self) -> i64 {
        self.clock.secs()
    }
}
