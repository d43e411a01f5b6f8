//! A conformance suite for [`crate::ApprovalChannel`] implementors (feature
//! `conformance`; exempt from semver), and one for [`crate::Authorizer`] implementations
//! ([`authorizer`]).
//!
//! Each scenario takes a fresh channel and checks a sentence of the trait's `# Contract` and
//! `# Behavior`. Run [`run_all`] from your tests.

use squad_model::Timestamp;

use crate::channel::ApprovalChannel;
use crate::error::{Error, ErrorKind, Result};
use crate::gate::{Gate, GateRequest, Mode, RunId, Trigger};

fn sample_gate() -> Result<Gate> {
    let now = Timestamp::from_unix_seconds(1_800_000_000)?;
    Gate::open(
        &GateRequest {
            mode: Mode::Autopilot,
            trigger: Trigger::RiskGate,
            topic: "conformance".to_owned(),
            awaiting: "nothing".to_owned(),
            detail: String::new(),
        },
        RunId::new("conformance")?,
        now,
        60,
    )
}

fn fail(message: String) -> Error {
    Error::new(ErrorKind::InvalidInput, "conformance", message)
}

/// `notify` either delivers (reporting at least one attempt and this channel's kind) or fails with
/// `Unavailable`/`Delivery`: it never fabricates a send.
pub async fn notify_reports_honestly(channel: &dyn ApprovalChannel) -> Result<()> {
    let gate = sample_gate()?;
    match channel.notify(&gate).await {
        Ok(d) if d.attempts >= 1 && d.channel == channel.kind() => Ok(()),
        Ok(d) => Err(fail(format!(
            "a delivery must report its channel and >= 1 attempt: {d:?}"
        ))),
        Err(e) if matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Delivery) => Ok(()),
        Err(e) => Err(fail(format!("notify failed with kind {}", e.kind()))),
    }
}

/// Outbound-only channels return no signals and `exhausted: true`; inbound ones return each signal
/// once (a second poll right after the first returns nothing new).
pub async fn poll_returns_each_signal_once(channel: &dyn ApprovalChannel) -> Result<()> {
    let gate = sample_gate()?;
    let first = channel.poll(&gate).await?;
    if !channel.capabilities().inbound {
        if !first.signals.is_empty() || !first.exhausted {
            return Err(fail(
                "an outbound-only channel must return no signals, exhausted".into(),
            ));
        }
        return Ok(());
    }
    let second = channel.poll(&gate).await?;
    if first.signals.iter().any(|s| second.signals.contains(s)) {
        return Err(fail("a signal was returned twice".into()));
    }
    Ok(())
}

/// Polled signals come oldest first.
pub async fn signals_are_ordered(channel: &dyn ApprovalChannel) -> Result<()> {
    let gate = sample_gate()?;
    let p = channel.poll(&gate).await?;
    if p.signals.windows(2).any(|w| w[0].at > w[1].at) {
        return Err(fail("signals are not oldest first".into()));
    }
    Ok(())
}

/// Runs every scenario.
///
/// # Errors
///
/// The first scenario that fails, named in the message.
pub async fn run_all(channel: &dyn ApprovalChannel) -> Result<()> {
    notify_reports_honestly(channel).await?;
    poll_returns_each_signal_once(channel).await?;
    signals_are_ordered(channel).await?;
    Ok(())
}

/// A conformance suite for [`crate::Authorizer`] implementations.
///
/// The backend is set up by the caller with the accounts of [`authorizer::Accounts`]; each scenario checks
/// a sentence of the trait's `# Contract` and `# Behavior`, and that [`crate::authorize`] on top
/// of the implementation applies the rules that do not depend on it (bots, the squad's own
/// identity, the registered approver) before the role.
///
/// ```
/// use squad_notify::conformance::authorizer::{Accounts, run_all};
/// use squad_notify::{Responder, Role, StaticAuthorizer};
///
/// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     let waker = std::task::Waker::noop();
/// #     let mut cx = std::task::Context::from_waker(&waker);
/// #     let mut f = std::pin::pin!(f);
/// #     loop { if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; } }
/// # }
/// let who = |login: &str, id| Responder { login: login.into(), id: Some(id), bot: false };
/// let accounts = Accounts {
///     admin: who("ada", 1),
///     write: who("wendy", 2),
///     read: who("rita", 3),
///     unknown: who("nobody", 4),
/// };
/// let table = StaticAuthorizer::new()
///     .with("ada", Role::Admin)
///     .with("wendy", Role::Write)
///     .with("rita", Role::Read);
/// block_on(run_all(&table, &accounts))?;
/// # Ok::<(), squad_notify::Error>(())
/// ```
pub mod authorizer {
    use squad_model::{ChannelKind, Timestamp};

    use super::fail;
    use crate::auth::{Allowed, ApproverRules, Authorizer, Identity, Refusal, Role, authorize};
    use crate::channel::{Signal, SignalBody};
    use crate::error::Result;
    use crate::gate::Responder;

    /// The accounts the backend was set up with.
    #[derive(Debug, Clone)]
    pub struct Accounts {
        /// An account with the admin role.
        pub admin: Responder,
        /// An account with the write role.
        pub write: Responder,
        /// An account with a role that may not approve (read or triage).
        pub read: Responder,
        /// An account that exists but has no access (or is unknown to the backend).
        pub unknown: Responder,
    }

    fn signal(who: &Responder) -> Result<Signal> {
        Ok(Signal {
            responder: who.clone(),
            at: Timestamp::from_unix_seconds(1_800_000_000)?,
            source: ChannelKind::GithubIssue,
            body: SignalBody::Text("/approve".to_owned()),
            reference: None,
        })
    }

    fn identity(who: &Responder) -> Identity {
        Identity {
            login: who.login.clone(),
            id: who.id,
        }
    }

    /// `role` reports each account's role: admin and write may approve, read may not, and an
    /// unknown account is `Ok(Role::None)` (never an error).
    pub async fn roles_are_reported(a: &dyn Authorizer, accounts: &Accounts) -> Result<()> {
        let admin = a.role(&accounts.admin).await?;
        if admin != Role::Admin {
            return Err(fail(format!("the admin account has role {admin}")));
        }
        let write = a.role(&accounts.write).await?;
        if !write.may_approve() || write == Role::Admin {
            return Err(fail(format!("the write account has role {write}")));
        }
        let read = a.role(&accounts.read).await?;
        if read.may_approve() {
            return Err(fail(format!("the read account may approve (role {read})")));
        }
        match a.role(&accounts.unknown).await {
            Ok(Role::None) => Ok(()),
            Ok(r) => Err(fail(format!("an unknown account has role {r}, not none"))),
            Err(e) => Err(fail(format!(
                "an unknown account must be Ok(Role::None), not an error: {e}"
            ))),
        }
    }

    /// Asking twice gives the same answer (the backend is asked each time; nothing decays).
    pub async fn answers_are_stable(a: &dyn Authorizer, accounts: &Accounts) -> Result<()> {
        for who in [
            &accounts.admin,
            &accounts.write,
            &accounts.read,
            &accounts.unknown,
        ] {
            let (x, y) = (a.role(who).await?, a.role(who).await?);
            if x != y {
                return Err(fail(format!("{}: {x} then {y}", who.login)));
            }
        }
        Ok(())
    }

    /// On top of the implementation, [`authorize`] refuses a bot and the squad's own identity
    /// whatever their role, allows the registered approver whatever its role, and otherwise
    /// lets the role decide.
    pub async fn authorize_applies_the_fixed_rules_first(
        a: &dyn Authorizer,
        accounts: &Accounts,
    ) -> Result<()> {
        let plain = ApproverRules::default();
        let bot = Responder {
            bot: true,
            ..accounts.admin.clone()
        };
        if authorize(&signal(&bot)?, &plain, a).await != Err(Refusal::Bot) {
            return Err(fail("a bot with the admin's role was not refused".into()));
        }
        let own = ApproverRules {
            approver: Some(identity(&accounts.admin)),
            own_identities: vec![identity(&accounts.admin)],
        };
        if authorize(&signal(&accounts.admin)?, &own, a).await != Err(Refusal::SelfApproval) {
            return Err(fail(
                "the squad's own identity was not refused (even as the registered approver)".into(),
            ));
        }
        let registered = ApproverRules {
            approver: Some(identity(&accounts.unknown)),
            own_identities: Vec::new(),
        };
        if authorize(&signal(&accounts.unknown)?, &registered, a).await
            != Ok(Allowed::RegisteredApprover)
        {
            return Err(fail(
                "the registered approver was not allowed without a role".into(),
            ));
        }
        match authorize(&signal(&accounts.write)?, &plain, a).await {
            Ok(Allowed::Collaborator(r)) if r.may_approve() => {}
            other => return Err(fail(format!("the write account: {other:?}"))),
        }
        match authorize(&signal(&accounts.read)?, &plain, a).await {
            Err(Refusal::Role(_)) => {}
            other => return Err(fail(format!("the read account: {other:?}"))),
        }
        match authorize(&signal(&accounts.unknown)?, &plain, a).await {
            Err(Refusal::Role(Role::None)) => Ok(()),
            other => Err(fail(format!("the unknown account: {other:?}"))),
        }
    }

    /// Runs every scenario.
    ///
    /// # Errors
    ///
    /// The first scenario that fails, named in the message.
    pub async fn run_all(a: &dyn Authorizer, accounts: &Accounts) -> Result<()> {
        roles_are_reported(a, accounts).await?;
        answers_are_stable(a, accounts).await?;
        authorize_applies_the_fixed_rules_first(a, accounts).await?;
        Ok(())
    }
}
