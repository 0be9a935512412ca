//! The flags a command is judged by (Redis's `getCommandFlags`): a command running a script or
//! function that declares flags takes the script's. The gates ask it, and so does cluster
//! routing (a declared script that writes is redirected from a READONLY replica), so it has a
//! module of its own below both.

use bytes::Bytes;

use crate::base::flags::Flags;
use crate::kernel::table::Command;
use crate::model::state::ServerState;

/// The flags the gates judge this command by (Redis's `getCommandFlags`): its own, except
/// for a command running a script or function that declares its flags (a shebang, or
/// `register_function`'s flags): then the script's flags decide whether it writes, may be
/// refused when out of memory or run on stale data, and the hidden `may_replicate` goes,
/// since the script says whether it writes. So a `no-writes` script is neither held by
/// CLIENT PAUSE WRITE nor refused to a MONITOR client, and any other declared script is
/// held. Scripts in compatibility mode (no shebang), unknown scripts and functions keep the
/// command's flags.
pub fn effective_flags(server: &ServerState, command: &Command, args: &[Bytes]) -> Flags {
    let flags = command.spec.flags;
    let Some(script) = declared_script_flags(server, command, args) else {
        return flags;
    };
    let mut flags = flags.without(
        Flags::STALE
            .union(Flags::DENYOOM)
            .union(Flags::WRITE)
            .union(Flags::MAY_REPLICATE),
    );
    if !script.allow_oom && !script.no_writes {
        flags = flags.union(Flags::DENYOOM);
    }
    if !script.no_writes {
        flags = flags.union(Flags::WRITE);
    }
    if script.allow_stale {
        flags = flags.union(Flags::STALE);
    }
    flags
}

/// The declared flags of the script or function a command runs (see [`effective_flags`]);
/// `None` for other commands and the cases listed there.
fn declared_script_flags(
    server: &ServerState,
    command: &Command,
    args: &[Bytes],
) -> Option<embedis_scripting::scripts::ScriptFlags> {
    let name = args.get(1)?;
    let flags = match command.full_name.as_str() {
        "eval" | "eval_ro" => embedis_scripting::scripts::parse_shebang(name).ok()?.0,
        "evalsha" | "evalsha_ro" => {
            if name.len() != 40 {
                return None;
            }
            let sha = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
            server.scripting.get()?.script(&sha)?.flags
        }
        "fcall" | "fcall_ro" => {
            let mut flags = server.functions.get()?.function(name)?.flags;
            // A function always has flags; none declared means it may write.
            flags.declared = true;
            flags
        }
        _ => return None,
    };
    flags.declared.then_some(flags)
}
