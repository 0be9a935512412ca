//! `nodes.conf` (`cluster-config-file`, in `dir`): read at start so that a restarted node is
//! the same node, written whenever the view changed (as Redis writes it before it sleeps).
//! The format is [`crate::model::nodes_conf`]'s; like Redis, the file is rewritten in place.

use std::io::{Seek, Write};
use std::path::PathBuf;

use crate::model::nodes_conf;
use crate::model::state::ServerState;

/// Where the file is: `cluster-config-file` under `dir` (an absolute name stays as it is).
pub fn path(server: &ServerState) -> PathBuf {
    std::path::Path::new(&server.config.dir).join(&server.config.cluster.config_file)
}

/// At start: the view in the file becomes this node's, or — no file, or an empty one — the
/// fresh node writes its own. An error is Redis's reason to stop.
pub fn load_at_start(server: &mut ServerState) -> Result<(), String> {
    let file = path(server);
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(format!(
                "Loading the cluster node config from {}: {e}",
                file.display()
            ))
        }
    };
    let now = server.clock.now_ms();
    match nodes_conf::parse(&text, now) {
        Ok(Some(mut loaded)) => {
            let id = loaded.myself().id.clone();
            std::mem::swap(&mut loaded.bus, &mut server.cluster.bus);
            server.cluster = loaded;
            server
                .log
                .notice(&format!("Node configuration loaded, I'm {id}"));
        }
        Ok(None) => {
            let id = server.cluster.myself().id.clone();
            server
                .log
                .notice(&format!("No cluster configuration found, I'm {id}"));
        }
        Err(corrupted) => {
            return Err(format!(
                "Unrecoverable error: corrupted cluster config file ({}).",
                corrupted.0
            ))
        }
    }
    super::refresh_myself(server);
    save(server).map_err(|e| format!("Fatal: can't update cluster config file: {e}"))
}

/// Writes the file now (CLUSTER SAVECONFIG, and every change).
pub fn save(server: &mut ServerState) -> std::io::Result<()> {
    let text = nodes_conf::render(&server.cluster);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path(server))?;
    file.write_all(text.as_bytes())?;
    file.set_len(text.len() as u64)?;
    file.rewind()?;
    server.cluster.bus.saved_version = server.cluster.version;
    server.cluster.bus.save_config = false;
    Ok(())
}

/// Writes the file if the view changed since it was last written.
pub fn save_if_changed(server: &mut ServerState) {
    let bus = &server.cluster.bus;
    if !bus.save_config && bus.saved_version == server.cluster.version {
        return;
    }
    if let Err(e) = save(server) {
        server
            .log
            .warning(&format!("Could not save the cluster node config: {e}"));
        // Not again before the next change.
        server.cluster.bus.saved_version = server.cluster.version;
        server.cluster.bus.save_config = false;
    }
}
