//! Authorization: who may decide a gate.

use std::collections::HashMap;
use std::fmt;

use squad_model::ChannelKind;

use crate::channel::Signal;
use crate::error::Result;
use crate::gate::Responder;

/// A repository role, as GitHub's `role_name` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// Full control.
    Admin,
    /// Manages the repository without destructive rights.
    Maintain,
    /// Pushes code.
    Write,
    /// Manages issues and labels (can add a `squad/*` label, yet may not approve).
    Triage,
    /// Reads.
    Read,
    /// No access.
    None,
}

impl Role {
    /// `true` for admin, maintain and write: the roles that may approve.
    pub fn may_approve(&self) -> bool {
        matches!(self, Role::Admin | Role::Maintain | Role::Write)
    }

    /// The name (`admin`, `maintain`, `write`, `triage`, `read`, `none`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Maintain => "maintain",
            Role::Write => "write",
            Role::Triage => "triage",
            Role::Read => "read",
            Role::None => "none",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Looks up the repository role of a responder (for example GitHub's collaborator permission).
///
/// # Contract
///
/// `role` reports what the backing service says *now*; it is called at the moment a decision is
/// consumed, never cached across gates by the library.
///
/// # Behavior
///
/// - An unknown account is `Ok(Role::None)`.
/// - A failed lookup is an `Err`; the library then refuses the signal (fails closed).
/// - The rules that do not depend on the backend (bots, the squad's own identity, the registered
///   approver) are applied by [`authorize`] before `role` is asked, so an implementation cannot
///   forget them.
///
/// # Implementing
///
/// Map the service's answer onto [`Role`]. For GitHub, read `role_name` from
/// `GET /repos/{o}/{r}/collaborators/{login}/permission` (the legacy `permission` field maps
/// `maintain` to `write` and `triage` to `read`).
#[async_trait::async_trait]
#[diagnostic::on_unimplemented(
    note = "implement `role` to map your service's permission onto `squad_notify::Role`"
)]
pub trait Authorizer: Send + Sync + fmt::Debug {
    /// The role of `who`.
    async fn role(&self, who: &Responder) -> Result<Role>;
}

#[async_trait::async_trait]
#[deny(clippy::missing_trait_methods)]
impl<T: Authorizer + ?Sized> Authorizer for std::sync::Arc<T> {
    async fn role(&self, who: &Responder) -> Result<Role> {
        (**self).role(who).await
    }
}

#[async_trait::async_trait]
#[deny(clippy::missing_trait_methods)]
impl<T: Authorizer + ?Sized> Authorizer for Box<T> {
    async fn role(&self, who: &Responder) -> Result<Role> {
        (**self).role(who).await
    }
}

/// A fixed table of roles: the in-memory reference [`Authorizer`].
///
/// ```
/// use squad_notify::{Authorizer, Responder, Role, StaticAuthorizer};
///
/// let a = StaticAuthorizer::new().with("octocat", Role::Write);
/// let who = Responder { login: "OctoCat".into(), id: Some(1), bot: false };
/// let role = futures_lite_block_on(a.role(&who));
/// # fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     let waker = std::task::Waker::noop();
/// #     let mut cx = std::task::Context::from_waker(&waker);
/// #     let mut f = std::pin::pin!(f);
/// #     loop { if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; } }
/// # }
/// assert_eq!(role?, Role::Write);
/// # Ok::<(), squad_notify::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct StaticAuthorizer {
    roles: HashMap<String, Role>,
}

impl StaticAuthorizer {
    /// An empty table (everyone is `Role::None`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Gives `login` (case-insensitive) the role `role`.
    pub fn with(mut self, login: &str, role: Role) -> Self {
        self.roles.insert(login.to_ascii_lowercase(), role);
        self
    }
}

#[async_trait::async_trait]
impl Authorizer for StaticAuthorizer {
    async fn role(&self, who: &Responder) -> Result<Role> {
        Ok(self
            .roles
            .get(&who.login.to_ascii_lowercase())
            .copied()
            .unwrap_or(Role::None))
    }
}

/// An identity: a login and, when known, the numeric id (compared first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The login (compared case-insensitively when ids are not both known).
    pub login: String,
    /// The numeric account id.
    pub id: Option<u64>,
}

impl Identity {
    /// An identity known by login only.
    pub fn login(login: &str) -> Self {
        Self {
            login: login.to_owned(),
            id: None,
        }
    }

    fn matches(&self, who: &Responder) -> bool {
        match (self.id, who.id) {
            (Some(a), Some(b)) => a == b,
            _ => self.login.eq_ignore_ascii_case(&who.login),
        }
    }
}

/// Who may decide: the registered approver, and the identities that never may (the squad itself).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApproverRules {
    /// The registered approver (`notify.github.handle`).
    pub approver: Option<Identity>,
    /// The squad's own identities (the token the squad posts with): never an approver.
    pub own_identities: Vec<Identity>,
}

/// Why a signal was accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowed {
    /// The person at the chat session (the in-chat channel).
    ChatSession,
    /// The registered approver.
    RegisteredApprover,
    /// A collaborator with this role (admin, maintain or write).
    Collaborator(Role),
}

/// Why a signal was refused (and ignored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The author is a bot.
    Bot,
    /// The author is the squad's own identity (no self-approval).
    SelfApproval,
    /// The author's role may not approve.
    Role(Role),
    /// The role could not be looked up (fails closed).
    LookupFailed(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Bot => f.write_str("bots may not decide gates"),
            Refusal::SelfApproval => {
                f.write_str("the squad's own identity may not decide its gates")
            }
            Refusal::Role(r) => write!(
                f,
                "role {r}: only the registered approver or a collaborator with write, maintain or admin rights may decide"
            ),
            Refusal::LookupFailed(m) => write!(f, "role lookup failed ({m}); refused"),
        }
    }
}

/// Decides whether `signal` may decide a gate.
///
/// Order: signals of the in-chat channel come from the person at the session and are allowed;
/// otherwise a bot is refused, then the squad's own identity is refused (even when it is also the
/// registered approver), then the registered approver is allowed, then the role decides
/// (admin, maintain, write). A failed lookup refuses.
pub async fn authorize(
    signal: &Signal,
    rules: &ApproverRules,
    authorizer: &dyn Authorizer,
) -> std::result::Result<Allowed, Refusal> {
    let who = &signal.responder;
    if signal.source == ChannelKind::InChat && !who.bot {
        return Ok(Allowed::ChatSession);
    }
    if who.bot {
        return Err(Refusal::Bot);
    }
    if rules.own_identities.iter().any(|i| i.matches(who)) {
        return Err(Refusal::SelfApproval);
    }
    if rules.approver.as_ref().is_some_and(|a| a.matches(who)) {
        return Ok(Allowed::RegisteredApprover);
    }
    match authorizer.role(who).await {
        Ok(role) if role.may_approve() => Ok(Allowed::Collaborator(role)),
        Ok(role) => Err(Refusal::Role(role)),
        Err(e) => Err(Refusal::LookupFailed(e.message().to_owned())),
    }
}
