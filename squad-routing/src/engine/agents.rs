//! Agent changes: runtime binding and archiving.

use squad_model::{RuntimeBinding, RuntimeId};

use super::Cx;
use crate::decision::Decision;
use crate::event::{ArchiveAgent, SetRuntime};

/// An agent's runtime is bound, goes online or offline, or is unbound.
pub(super) fn set_runtime(cx: &mut Cx<'_>, e: &SetRuntime) {
    let SetRuntime { agent_id, runtime } = e;
    let runtime = runtime.map(|status| RuntimeBinding {
        runtime_id: cx
            .dir
            .agent(agent_id)
            .and_then(|a| a.runtime.as_ref())
            .map_or_else(
                || {
                    RuntimeId::new(format!("runtime-{agent_id}"))
                        .expect("an id without whitespace stays valid")
                },
                |r| r.runtime_id.clone(),
            ),
        status,
        last_seen_at: Some(cx.at),
    });
    cx.push(Decision::SetRuntime {
        agent_id: agent_id.clone(),
        runtime,
    });
}

/// An agent is archived.
pub(super) fn archive_agent(cx: &mut Cx<'_>, e: &ArchiveAgent) {
    cx.push(Decision::ArchiveAgent {
        agent_id: e.agent_id.clone(),
        archived_at: cx.at,
    });
}
