//! Configuration, token handling and error messages: the bad inputs.

use squad_notify::ErrorKind;
use squad_notify::github::{GithubClient, GithubConfig, Login, RepoSlug, Token};

use super::emulator::{Emulator, OWNER, REPO, TOKEN};
use super::open;

#[test]
fn bad_slugs_logins_and_bases_are_refused_with_the_reason() {
    for bad in [
        "",
        "acme",
        "acme/",
        "/widgets",
        "acme/widgets/x",
        "ac me/w",
        "acme/..",
        "a/b?c",
    ] {
        let e = RepoSlug::parse(bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad:?}");
        assert!(e.to_string().contains("owner/repo"), "{e}");
    }
    for bad in [
        "",
        "@",
        "-lead",
        "has space",
        "x".repeat(40).as_str(),
        "a/b",
        "evil\n",
    ] {
        assert!(Login::new(bad).is_err(), "{bad:?}");
    }
    assert!(Login::new("@octocat").unwrap().matches("OctoCat"));
    assert!(Login::new("dependabot[bot]").is_ok());
    let c = GithubConfig::new("acme/widgets", "octocat").unwrap();
    for bad in [
        "api.github.com",
        "ftp://x",
        "https://x/api?token=1",
        "not a url",
    ] {
        assert!(c.clone().with_api_base(bad).is_err(), "{bad:?}");
    }
    assert_eq!(
        c.with_api_base("https://ghe.example.com/api/v3/")
            .unwrap()
            .api_base(),
        "https://ghe.example.com/api/v3"
    );
}

#[tokio::test]
async fn the_token_is_never_shown() {
    let t = Token::new(TOKEN.to_owned()).unwrap();
    assert_eq!(format!("{t:?}"), "Token(***)");
    let e = Token::new("with space".into()).unwrap_err();
    assert!(!e.to_string().contains("with space"));
    let config = GithubConfig::new("acme/widgets", "octocat").unwrap();
    let client = GithubClient::new(config, t).unwrap();
    assert!(!format!("{client:?}").contains(TOKEN));
}

#[tokio::test]
async fn a_rejected_token_gives_an_error_without_the_token() {
    let em = Emulator::start().await;
    let config = GithubConfig::new(&format!("{OWNER}/{REPO}"), "octocat")
        .unwrap()
        .with_own_login("squad-bot")
        .unwrap()
        .with_api_base(&em.server.uri())
        .unwrap();
    let wrong = "ghp_wrongTOKEN999";
    let client = GithubClient::new(config, Token::new(wrong.into()).unwrap()).unwrap();
    let e = client.get_issue(1).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unauthorized);
    assert!(!e.is_retryable());
    for text in [e.to_string(), format!("{e:?}")] {
        assert!(!text.contains(wrong), "{text}");
        assert!(!text.contains(TOKEN), "{text}");
    }
    assert_eq!(
        e.to_string(),
        "github: get issue: HTTP 401: GitHub refused the token"
    );
}

#[tokio::test]
async fn bad_identifiers_never_reach_github() {
    let em = Emulator::start().await;
    let client = em.client();
    let before = em.s().requests;
    for (run, gate, digest) in [
        ("run 1", "g-1", "d"),
        ("run-1", "g-1 -->", "d"),
        ("run-1", "g-1", ""),
        ("run-1", "", "d"),
    ] {
        let e = client
            .open_gate(run, gate, digest, &super::payload())
            .await
            .unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::InvalidInput,
            "{run:?} {gate:?} {digest:?}"
        );
    }
    assert_eq!(em.s().requests, before);
    let e = client.collaborator_role("../../admin").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let _ = open(&client).await;
}

#[tokio::test]
async fn collaborator_roles_are_read_from_role_name() {
    let em = Emulator::start().await;
    em.person("maint", Some(("write", "maintain")));
    em.person("custom-writer", Some(("write", "release-manager")));
    em.person("custom-reader", Some(("read", "auditor")));
    em.person("stranger", None);
    let client = em.client();
    let cases = [
        ("maint", "maintain", true),
        ("custom-writer", "release-manager", true),
        ("custom-reader", "auditor", false),
        ("stranger", "none", false),
        ("octocat", "admin", true),
    ];
    for (login, role, may) in cases {
        let r = client.collaborator_role(login).await.unwrap();
        assert_eq!(
            (r.role_name.as_str(), r.may_decide()),
            (role, may),
            "{login}"
        );
    }
}

#[test]
fn public_types_are_send_and_sync_and_step_is_a_send_future() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>(_: &T) {}
    send_sync::<GithubClient>();
    send_sync::<squad_notify::github::PollState>();
    send_sync::<squad_notify::Error>();
    send_sync::<squad_notify::github::Candidate>();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let config = GithubConfig::new("acme/widgets", "octocat").unwrap();
        let client = GithubClient::new(config, Token::new(TOKEN.to_owned()).unwrap()).unwrap();
        let mut state = squad_notify::github::PollState::new(
            1,
            "g-1",
            squad_model::Timestamp::now(),
            "octocat",
            None,
        );
        let parser = super::parse;
        let fut = client.step(&mut state, &parser);
        send(&fut);
        drop(fut);
        send(&client.poll(&mut state));
        send(&client.open_gate("r", "g", "d", &super::payload()));
    });
}

#[test]
fn the_environment_is_read_with_github_actions_precedence() {
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    };
    assert!(Token::from_lookup(&env(&[("GITHUB_TOKEN", "ghs_a"), ("GH_TOKEN", "gho_b")])).is_ok());
    assert!(Token::from_lookup(&env(&[("GITHUB_TOKEN", "  "), ("GH_TOKEN", "gho_b")])).is_ok());
    let e = Token::from_lookup(&env(&[("GITHUB_TOKEN", ""), ("GH_TOKEN", " ")])).unwrap_err();
    // No token is no bad input: the channel is unavailable here (the host degrades to in-chat).
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    let e = Token::from_lookup(&env(&[("GH_TOKEN", "two words")])).unwrap_err();
    assert!(!e.to_string().contains("two words"));

    let c = GithubConfig::from_lookup("acme/widgets", "octocat", &env(&[])).unwrap();
    assert_eq!(c.api_base(), "https://api.github.com");
    let c = GithubConfig::from_lookup(
        "acme/widgets",
        "octocat",
        &env(&[("GITHUB_API_URL", "https://ghe.example.com/api/v3")]),
    )
    .unwrap();
    assert_eq!(c.api_base(), "https://ghe.example.com/api/v3");
    let e = GithubConfig::from_lookup(
        "acme/widgets",
        "octocat",
        &env(&[("GITHUB_API_URL", "nope")]),
    )
    .unwrap_err();
    assert!(e.to_string().contains("API base"), "{e}");
}
