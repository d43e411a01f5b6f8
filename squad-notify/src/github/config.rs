//! Settings of the GitHub layer and the token, read from the environment at use time.

use std::fmt;

use crate::error::{ErrorKind, Result};

/// The API base used when `GITHUB_API_URL` is unset (the GitHub Actions convention).
pub const DEFAULT_API_URL: &str = "https://api.github.com";

/// A GitHub login (user or bot): 1 to 39 ASCII letters, digits or `-`, optionally followed by
/// `[bot]`. Compared case-insensitively, as GitHub does.
#[derive(Clone, Eq)]
pub struct Login(String);

impl Login {
    /// Checks and wraps `value` (a leading `@` is dropped).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] when it is not a GitHub login.
    pub fn new(value: &str) -> Result<Self> {
        let v = value.strip_prefix('@').unwrap_or(value);
        let core = v.strip_suffix("[bot]").unwrap_or(v);
        let ok = !core.is_empty()
            && core.len() <= 39
            && core.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !core.starts_with('-');
        if ok {
            Ok(Self(v.to_owned()))
        } else {
            Err(super::gh(
                ErrorKind::InvalidInput,
                "read config",
                format!("{value:?} is not a GitHub login (letters, digits and '-', at most 39)"),
            ))
        }
    }

    /// The login as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `other` names the same account (case-insensitive).
    pub fn matches(&self, other: &str) -> bool {
        self.0
            .eq_ignore_ascii_case(other.strip_prefix('@').unwrap_or(other))
    }
}

impl PartialEq for Login {
    fn eq(&self, other: &Self) -> bool {
        self.matches(&other.0)
    }
}

impl fmt::Display for Login {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Login {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Login({:?})", self.0)
    }
}

/// A repository named `owner/repo`.
#[derive(Clone, PartialEq, Eq)]
pub struct RepoSlug {
    owner: String,
    name: String,
}

impl RepoSlug {
    /// Parses `owner/repo`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] unless the text is two non-empty parts of letters, digits, `-`,
    /// `_` and `.` separated by one `/` (`.` and `..` are refused as names).
    pub fn parse(value: &str) -> Result<Self> {
        let bad = || {
            super::gh(
                ErrorKind::InvalidInput,
                "read config",
                format!("{value:?} is not an owner/repo slug"),
            )
        };
        let (owner, name) = value.split_once('/').ok_or_else(bad)?;
        let part_ok = |p: &str| {
            !p.is_empty()
                && p != "."
                && p != ".."
                && p.len() <= 100
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        if part_ok(owner) && part_ok(name) {
            Ok(Self {
                owner: owner.to_owned(),
                name: name.to_owned(),
            })
        } else {
            Err(bad())
        }
    }

    /// The owner.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The repository name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The repository a git remote URL points at, when its host is one of `hosts` (compared
    /// without case; `github.com`, plus a GitHub Enterprise host): the https form
    /// (`https://github.com/owner/repo.git`, credentials allowed and ignored), the ssh forms
    /// (`git@github.com:owner/repo.git`, `ssh://git@github.com:22/owner/repo`) and `git://`.
    /// `None` for any other URL.
    ///
    /// ```
    /// use squad_notify::github::RepoSlug;
    ///
    /// let hosts = ["github.com"];
    /// for url in [
    ///     "https://github.com/acme/widgets.git",
    ///     "https://user:token@github.com/acme/widgets",
    ///     "git@github.com:acme/widgets.git",
    ///     "ssh://git@github.com:22/acme/widgets/",
    /// ] {
    ///     assert_eq!(RepoSlug::from_remote_url(url, &hosts).unwrap().to_string(), "acme/widgets");
    /// }
    /// assert!(RepoSlug::from_remote_url("https://gitlab.com/acme/widgets", &hosts).is_none());
    /// ```
    pub fn from_remote_url(url: &str, hosts: &[&str]) -> Option<Self> {
        Self::remote(url, hosts)
    }

    /// Like [`RepoSlug::from_remote_url`] for `github.com` and the host of `GITHUB_API_URL`
    /// (a GitHub Enterprise server), the hosts a `github-issue` channel can reach.
    pub fn from_remote_url_env(url: &str) -> Option<Self> {
        let api = std::env::var("GITHUB_API_URL").unwrap_or_default();
        let ghe = api
            .split_once("://")
            .and_then(|(_, rest)| rest.split(['/', ':', '?']).next())
            .and_then(|authority| authority.rsplit('@').next())
            .unwrap_or_default()
            .to_owned();
        Self::remote(url, &["github.com", ghe.as_str()])
    }

    fn remote(url: &str, hosts: &[&str]) -> Option<Self> {
        let url = url.trim();
        let (host, path) = match url.split_once("://") {
            Some((scheme, rest)) => {
                if !matches!(scheme, "https" | "http" | "ssh" | "git" | "git+ssh") {
                    return None;
                }
                let (authority, path) = rest.split_once('/')?;
                let host = authority.rsplit('@').next()?;
                // An ssh port or an https port follows the host.
                (host.split(':').next()?, path)
            }
            None => {
                // scp-like: [user@]host:owner/repo
                let (authority, path) = url.split_once(':')?;
                if authority.contains('/') {
                    return None;
                }
                (authority.rsplit('@').next()?, path)
            }
        };
        if host.is_empty() || !hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            return None;
        }
        let path = path.trim_matches('/');
        let path = path.strip_suffix(".git").unwrap_or(path);
        Self::parse(path).ok()
    }
}

impl fmt::Display for RepoSlug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

impl fmt::Debug for RepoSlug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RepoSlug({self})")
    }
}

/// What the GitHub layer needs to know, none of it secret.
///
/// ```
/// use squad_notify::github::GithubConfig;
///
/// let c = GithubConfig::new("acme/widgets", "octocat")?
///     .with_api_base("https://ghe.example.com/api/v3")?
///     .with_own_login("squad-bot")?;
/// assert_eq!(c.repo().to_string(), "acme/widgets");
/// assert_eq!(c.approver().as_str(), "octocat");
/// assert!(GithubConfig::new("not a slug", "octocat").is_err());
/// # Ok::<(), squad_notify::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GithubConfig {
    repo: RepoSlug,
    approver: Login,
    own_login: Option<Login>,
    api_base: String,
}

impl GithubConfig {
    /// A configuration for `repo` (`owner/repo`) with `approver` as the registered handle and the
    /// public API as base.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] for a malformed slug or login.
    pub fn new(repo: &str, approver: &str) -> Result<Self> {
        Ok(Self {
            repo: RepoSlug::parse(repo)?,
            approver: Login::new(approver)?,
            own_login: None,
            api_base: DEFAULT_API_URL.to_owned(),
        })
    }

    /// Like [`GithubConfig::new`], with the API base from `GITHUB_API_URL` when it is set and not
    /// empty (the GitHub Actions convention), else `https://api.github.com`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] for a malformed slug, login or URL.
    pub fn from_env(repo: &str, approver: &str) -> Result<Self> {
        Self::from_lookup(repo, approver, &|name| std::env::var(name).ok())
    }

    /// Like [`GithubConfig::from_env`], reading variables through `lookup`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] for a malformed slug, login or URL.
    pub fn from_lookup(
        repo: &str,
        approver: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        let config = Self::new(repo, approver)?;
        match lookup("GITHUB_API_URL") {
            Some(url) if !url.trim().is_empty() => config.with_api_base(url.trim()),
            _ => Ok(config),
        }
    }

    /// Uses `url` (`http://` or `https://`, e.g. a GitHub Enterprise `/api/v3` base) as API base.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] when it is not an absolute http(s) URL with a host.
    pub fn with_api_base(mut self, url: &str) -> Result<Self> {
        let bad = |why: &str| {
            super::gh(
                ErrorKind::InvalidInput,
                "read config",
                format!("API base {url:?} {why}"),
            )
        };
        let uri: http::Uri = url.parse().map_err(|_| bad("is not a URL"))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.authority().is_none() {
            return Err(bad("must be an absolute http(s) URL"));
        }
        if uri.query().is_some() {
            return Err(bad("must not carry a query string"));
        }
        self.api_base = url.trim_end_matches('/').to_owned();
        Ok(self)
    }

    /// Names the squad's own account (the token's identity). Its comments and labels never count
    /// as decisions, and only an issue body it wrote is trusted. When unset, the client asks
    /// GitHub (`GET /user`).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] for a malformed login.
    pub fn with_own_login(mut self, login: &str) -> Result<Self> {
        self.own_login = Some(Login::new(login)?);
        Ok(self)
    }

    /// The repository hosting the approval issues.
    pub fn repo(&self) -> &RepoSlug {
        &self.repo
    }

    /// The registered approver handle.
    pub fn approver(&self) -> &Login {
        &self.approver
    }

    /// The squad's own login, when configured.
    pub fn own_login(&self) -> Option<&Login> {
        self.own_login.as_ref()
    }

    /// The API base URL, without a trailing slash.
    pub fn api_base(&self) -> &str {
        &self.api_base
    }
}

/// A GitHub token. It is handed to the HTTP client and dropped; it is never stored by this crate,
/// never logged, never printed (`Debug` shows `Token(***)`, there is no `Display`), never put in
/// an error.
pub struct Token(String);

impl Token {
    /// Wraps a token.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] when it is empty or holds whitespace or control characters
    /// (the message does not repeat it).
    pub fn new(value: String) -> Result<Self> {
        if value.is_empty() || value.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(super::gh(
                ErrorKind::InvalidInput,
                "read token",
                "the token is empty or holds whitespace",
            ));
        }
        Ok(Self(value))
    }

    /// Reads `GITHUB_TOKEN`, or else `GH_TOKEN` (surrounding whitespace trimmed; an empty
    /// variable counts as unset).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Unavailable`] when neither is set; [`ErrorKind::InvalidInput`] when the value
    /// is not a usable token.
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(&|name| std::env::var(name).ok())
    }

    /// Like [`Token::from_env`], reading variables through `lookup` (for hosts that keep their
    /// own environment, and for tests).
    ///
    /// ```
    /// use squad_notify::github::Token;
    ///
    /// let env = |name: &str| (name == "GH_TOKEN").then(|| "gho_x".to_owned());
    /// assert!(Token::from_lookup(&env).is_ok());
    /// let err = Token::from_lookup(&|_| None).unwrap_err();
    /// assert_eq!(err.to_string(), "github: read token: set GITHUB_TOKEN or GH_TOKEN");
    /// ```
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Unavailable`] when neither is set; [`ErrorKind::InvalidInput`] when the value
    /// is not a usable token.
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self> {
        for var in ["GITHUB_TOKEN", "GH_TOKEN"] {
            if let Some(v) = lookup(var) {
                let v = v.trim();
                if !v.is_empty() {
                    return Self::new(v.to_owned());
                }
            }
        }
        // A missing token is no bad input: the channel cannot work here, and hosts degrade to
        // in-chat.
        Err(super::gh(
            ErrorKind::Unavailable,
            "read token",
            "set GITHUB_TOKEN or GH_TOKEN",
        ))
    }

    pub(crate) fn into_secret(self) -> String {
        self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}
