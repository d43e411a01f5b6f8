//! Issue 25: no credential that reaches git, HTTP or the OS comes back in anything `squad`
//! prints or logs. Canary secrets sit in remote URLs (path, query, user information) and in the
//! secret environment variables; every command that relays a remote's failure runs against a
//! real HTTP server on 127.0.0.1 (failing in several ways) and a closed port, plain, `--json`
//! and `-vv`; no canary may appear in stdout or stderr.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::git_repo::Clones;

/// The canaries: a GitHub-shaped token in a URL path, a query token, a password, and values of
/// the secret environment variables (one of them, not token-shaped, also in a URL path).
const PATH_TOKEN: &str = "ghp_CANARYpathTOKEN0123456789abcdefABCD";
const QUERY_TOKEN: &str = "CANARYquery7f3a9b";
const PASSWORD: &str = "CANARYpassw0rd";
const ENV_TOKEN: &str = "plainCANARYenv42";
const WEBHOOK_SECRET: &str = "CANARYwebhookSecret";
const REMOTE_SAYS: &str = "CANARYremoteSays";

/// A minimal HTTP server on 127.0.0.1: `/pkt-err/…` answers as a smart-HTTP git server that
/// refuses with a message quoting a token (git prints it as `remote error: …`), `/auth/…` asks
/// for credentials (401), anything else is a 500. Stops when dropped.
struct Server {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        stream.set_nonblocking(false).unwrap();
                        stream
                            .set_read_timeout(Some(Duration::from_secs(5)))
                            .unwrap();
                        let mut head = Vec::new();
                        let mut buf = [0u8; 1024];
                        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                            match stream.read(&mut buf) {
                                Ok(0) | Err(_) => break,
                                Ok(n) => head.extend_from_slice(&buf[..n]),
                            }
                        }
                        let head = String::from_utf8_lossy(&head);
                        let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                        let _ = stream.write_all(&response(&path, &head));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Server { port, stop }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn response(path: &str, head: &str) -> Vec<u8> {
    if path.starts_with("/pkt-err/") {
        let line = format!("ERR access denied for access_token={REMOTE_SAYS} {PATH_TOKEN}\n");
        let body = format!("{:04x}{line}", line.len() + 4);
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/x-git-upload-pack-advertisement\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    } else if path.starts_with("/auth/") {
        b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"r\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec()
    } else {
        // Anything else (a GitHub API call, a webhook delivery): a 500 whose JSON body echoes
        // the request line and every header, the `Authorization` one included, as a careless
        // proxy might.
        let body = serde_json::json!({
            "message": format!("upstream failed for {}", head.replace("\r\n", " | ")),
            "documentation_url": "https://docs.github.com/rest",
        })
        .to_string();
        format!(
            "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }
}

/// The environment of every run: the secret variables hold canaries.
const ENV: [(&str, &str); 4] = [
    ("GITHUB_TOKEN", ENV_TOKEN),
    ("GH_TOKEN", ENV_TOKEN),
    ("SQUAD_WEBHOOK_SECRET", WEBHOOK_SECRET),
    ("GIT_TERMINAL_PROMPT", "0"),
];

#[track_caller]
fn assert_clean(what: &str, out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for canary in [
        PATH_TOKEN,
        QUERY_TOKEN,
        PASSWORD,
        ENV_TOKEN,
        WEBHOOK_SECRET,
        REMOTE_SAYS,
        "CANARY",
    ] {
        assert!(
            !stdout.contains(canary) && !stderr.contains(canary),
            "{what}: {canary} leaked\nstdout: {stdout}\nstderr: {stderr}"
        );
    }
}

/// The remote URLs tried, each holding a canary (or several).
fn remote_urls(server: &Server, closed_port: u16) -> Vec<String> {
    vec![
        server.url(&format!("/{PATH_TOKEN}/r.git")),
        server.url(&format!("/r.git?access_token={QUERY_TOKEN}")),
        server.url(&format!("/r.git?x=1&{}", "sig=CANARYsig")),
        server
            .url("/auth/r.git")
            .replace("http://", &format!("http://user:{PASSWORD}@")),
        server.url(&format!("/{ENV_TOKEN}/r.git")),
        server.url(&format!("/pkt-err/{PATH_TOKEN}/r.git")),
        format!(
            "http://user:{PASSWORD}@127.0.0.1:{closed_port}/{PATH_TOKEN}/r.git?token={QUERY_TOKEN}"
        ),
    ]
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn check_remote_commands(w: &Clones, dir: &Path, url: &str) {
    w.git(dir, &["remote", "set-url", "origin", url]);
    let runs: [&[&str]; 5] = [
        &["notes", "sync"],
        &["--json", "notes", "sync"],
        &["-vv", "notes", "sync"],
        &["-vv", "notes", "promote"],
        &["-vv", "doctor"],
    ];
    for args in runs {
        let out = w.squad_env(dir, args, &ENV);
        assert_clean(&format!("squad {args:?} with origin {url}"), &out);
        if args.contains(&"sync") {
            assert_eq!(out.status.code(), Some(1), "{args:?} {url}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            // The error still says where it went, or what the remote said.
            assert!(
                stderr.contains("127.0.0.1") || stderr.contains("remote error: access denied"),
                "{args:?} {url}: {stderr}"
            );
        }
    }
}

#[test]
fn notes_sync_and_promote_never_print_a_credential_of_the_remote() {
    let server = Server::start();
    let w = Clones::new("secrets");
    let dir = w.path("a");
    w.ok(
        &dir,
        &[
            "notes",
            "write",
            "--agent",
            "data",
            "--type",
            "progress",
            "--content",
            "x",
        ],
        None,
    );
    for url in remote_urls(&server, closed_port()) {
        check_remote_commands(&w, &dir, &url);
    }
}

/// `squad approval request` with the github-issue channel against an API that fails echoing
/// the request (token included) and with the webhook channel against a hook URL whose path is
/// the secret, answered the same way: no canary in any output, at `-vv` too.
#[test]
fn approval_requests_against_failing_apis_never_print_a_credential() {
    let server = Server::start();
    let tmp = tempfile::tempdir().unwrap();
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_squad"));
        c.arg("-C")
            .arg(tmp.path())
            .arg("--state-dir")
            .arg("state")
            .args(args)
            .env("HOME", tmp.path())
            .env("SQUAD_WEBHOOK_RETRIES", "1")
            .env("SQUAD_WEBHOOK_TIMEOUT_MS", "2000")
            .envs(ENV.iter().copied())
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null());
        c.output().unwrap()
    };
    // An API base with a query is refused before any request (its message quotes it); one
    // without is called and answers 500, echoing the request with its token.
    let api_query = server.url(&format!("/{PATH_TOKEN}/api/v3?access_token={QUERY_TOKEN}"));
    let api = server.url(&format!("/{PATH_TOKEN}/api/v3"));
    let hook = server.url(&format!("/hooks/CANARYhookPath/{PATH_TOKEN}"));
    let request = [
        "approval",
        "request",
        "--mode",
        "autopilot",
        "--trigger",
        "risk-gate",
        "--topic",
        "Deploy",
        "--awaiting",
        "approve",
        "--detail",
        "d",
    ];
    let github: &[&str] = &[
        "approval",
        "configure",
        "--channel",
        "github-issue",
        "--handle",
        "octocat",
        "--repo",
        "o/r",
    ];
    let webhook: &[&str] = &["approval", "configure", "--channel", "webhook"];
    let cases = [(github, &api_query), (github, &api), (webhook, &api)];
    for (config, api) in cases {
        let env: [(&str, &str); 2] = [("GITHUB_API_URL", api), ("SQUAD_WEBHOOK_URL", &hook)];
        let o = run(config, &env);
        assert_eq!(o.status.code(), Some(0), "{o:?}");
        for verbose in [&[][..], &["-vv"][..], &["--json"][..]] {
            let args: Vec<&str> = verbose.iter().chain(request.iter()).copied().collect();
            let o = run(&args, &env);
            assert_clean(&format!("{config:?} then {args:?}"), &o);
            let o = run(&["approval", "wait", "--timeout", "0"], &env);
            assert_clean(&format!("{config:?} then wait"), &o);
            // Answer in-chat so that the next request may open a gate.
            let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_squad"));
            c.arg("-C")
                .arg(tmp.path())
                .args(["--state-dir", "state", "approval", "wait", "--timeout", "5"])
                .env("HOME", tmp.path())
                .envs(ENV.iter().copied())
                .envs(env.iter().copied());
            let o = crate::git_repo::run_with_stdin(&mut c, Some("/approve\n"));
            assert_clean(&format!("{config:?} then wait with an answer"), &o);
        }
    }
}
