//! A node's line as CLUSTER NODES prints it and `nodes.conf` keeps it, and the whole file:
//! Redis 7.0's format, written here and read back at start (Redis's `clusterGenNodeDescription`,
//! `clusterSaveConfig` and `clusterLoadConfig`), so that a node restarted keeps its ID, epochs,
//! slots and the nodes it knew — and so that a redis-server could read an embedis node's file.
//!
//! A line: `<id> <ip>:<port>@<bus-port>[,<hostname>] <flags> <primary|-> <ping-sent>
//! <pong-received> <config-epoch> <connected|disconnected> <slot|range>… [<slot>->-<id>]…`;
//! the file ends with `vars currentEpoch <n> lastVoteEpoch <n>`.

use std::fmt::Write as _;

use crate::model::cluster_view::{Cluster, Node, Role, MYSELF, SLOTS};

/// One line of CLUSTER NODES (and REPLICAS, and `nodes.conf`) for node `number`.
pub fn describe(cluster: &Cluster, number: u32) -> String {
    let node = cluster.node(number).expect("known node");
    let mut line = format!("{} {}", node.id, node.address());
    if !node.hostname.is_empty() {
        let _ = write!(line, ",{}", node.hostname);
    }
    line.push(' ');
    line.push_str(&flags_text(node, number == MYSELF));
    let (primary, epoch) = match &node.role {
        Role::Replica(id) if !id.is_empty() => {
            let epoch = cluster
                .find(id.as_bytes())
                .and_then(|n| cluster.node(n))
                .map_or(node.config_epoch, |p| p.config_epoch);
            (id.clone(), epoch)
        }
        _ => ("-".to_string(), node.config_epoch),
    };
    let connected = number == MYSELF || node.link.is_some();
    let _ = write!(
        line,
        " {primary} {} {} {epoch} {}",
        node.ping_sent,
        node.pong_received,
        if connected {
            "connected"
        } else {
            "disconnected"
        }
    );
    // A fresh node's default of serving everything is not a claim: cluster managers
    // (`redis-cli --cluster create`) read CLUSTER NODES to find empty nodes and build their
    // ADDSLOTS from the slots listed there.
    if !(number == MYSELF && cluster.implicit) {
        for (start, end) in cluster.ranges_of(number) {
            if start == end {
                let _ = write!(line, " {start}");
            } else {
                let _ = write!(line, " {start}-{end}");
            }
        }
    }
    if number == MYSELF {
        migrations(cluster, &mut line);
    }
    line
}

/// The flags as Redis lists them (`noflags` when none).
fn flags_text(node: &Node, myself: bool) -> String {
    let mut flags = Vec::new();
    for (on, name) in [
        (myself, "myself"),
        (node.is_primary(), "master"),
        (!node.is_primary(), "slave"),
        (node.pfail, "fail?"),
        (node.fail, "fail"),
        (node.handshake, "handshake"),
        (node.noaddr || (node.ip.is_empty() && !myself), "noaddr"),
        (node.nofailover, "nofailover"),
    ] {
        if on {
            flags.push(name);
        }
    }
    if flags.is_empty() {
        return "noflags".into();
    }
    flags.join(",")
}

/// This node's slots in migration: `[slot->-id]` and `[slot-<-id]`, in slot order.
fn migrations(cluster: &Cluster, line: &mut String) {
    for slot in 0..SLOTS as u16 {
        if let Some(n) = cluster
            .migrating
            .get(&slot)
            .and_then(|&to| cluster.node(to))
        {
            let _ = write!(line, " [{slot}->-{}]", n.id);
        } else if let Some(n) = cluster.importing.get(&slot).and_then(|&f| cluster.node(f)) {
            let _ = write!(line, " [{slot}-<-{}]", n.id);
        }
    }
}

/// The whole file: every node but those in handshake, then the epochs.
pub fn render(cluster: &Cluster) -> String {
    let mut text = String::new();
    for (number, node) in cluster.known() {
        if node.handshake {
            continue;
        }
        text.push_str(&describe(cluster, number));
        text.push('\n');
    }
    let _ = writeln!(
        text,
        "vars currentEpoch {} lastVoteEpoch {}",
        cluster.current_epoch, cluster.last_vote_epoch
    );
    text
}

/// Why a file cannot be loaded (Redis stops: "Unrecoverable error: corrupted cluster config
/// file.").
#[derive(Debug, PartialEq, Eq)]
pub struct Corrupted(pub String);

/// Reads a file into a cluster view (`enabled`), its clock at `now` (pings and pongs seen are
/// dated now, as Redis does). `Ok(None)` for an empty file. A file that only names this node,
/// serving nothing at epoch 0, gives a fresh node (serving every slot by default).
pub fn parse(text: &str, now: i64) -> Result<Option<Cluster>, Corrupted> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let mut cluster: Option<Cluster> = None;
    let mut pending: Vec<Vec<&str>> = Vec::new();
    let mut epochs = (0u64, 0u64);
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.first() {
            None => continue,
            Some(w) if w.eq_ignore_ascii_case("vars") => epochs = parse_vars(&words, epochs)?,
            Some(_) if words.len() < 8 => {
                return Err(Corrupted(format!("a line of {} fields", words.len())))
            }
            Some(_) => {
                if words[2].split(',').any(|f| f == "myself") {
                    cluster = Some(Cluster::new(true, words[0].to_string()));
                }
                pending.push(words);
            }
        }
    }
    let mut cluster = cluster.ok_or_else(|| Corrupted("no line for this node".into()))?;
    cluster.end_implicit(true);
    for words in &pending {
        load_node(&mut cluster, words, now)?;
    }
    for words in &pending {
        load_slots(&mut cluster, words)?;
    }
    cluster.current_epoch = epochs.0.max(cluster.max_epoch());
    cluster.last_vote_epoch = epochs.1;
    let fresh = cluster.known().count() == 1
        && cluster.slots_assigned() == 0
        && cluster.current_epoch == 0
        && cluster.myself().is_primary();
    if fresh {
        cluster = Cluster::new(true, cluster.myself().id.clone());
    }
    Ok(Some(cluster))
}

fn parse_vars(words: &[&str], mut epochs: (u64, u64)) -> Result<(u64, u64), Corrupted> {
    if words.len().is_multiple_of(2) {
        return Err(Corrupted("an odd vars line".into()));
    }
    for pair in words[1..].chunks(2) {
        let value = pair[1].parse().unwrap_or(0);
        if pair[0].eq_ignore_ascii_case("currentEpoch") {
            epochs.0 = value;
        } else if pair[0].eq_ignore_ascii_case("lastVoteEpoch") {
            epochs.1 = value;
        }
    }
    Ok(epochs)
}

/// The node a line describes (added, or this node's own entry).
fn load_node(cluster: &mut Cluster, words: &[&str], now: i64) -> Result<(), Corrupted> {
    let id = words[0];
    let number = match cluster.find(id.as_bytes()) {
        Some(n) => n,
        None => cluster.add(Node::new(id.to_string(), String::new(), 0, 0, now)),
    };
    let (address, hostname) = words[1].split_once(',').unwrap_or((words[1], ""));
    let (ip_port, bus) = address
        .rsplit_once('@')
        .ok_or_else(|| Corrupted(format!("address {address}")))?;
    let (ip, port) = ip_port
        .rsplit_once(':')
        .ok_or_else(|| Corrupted(format!("address {address}")))?;
    let node = cluster.node_mut(number).expect("added");
    node.ip = ip.to_string();
    node.port = port.parse().unwrap_or(0);
    node.bus_port = bus.parse().unwrap_or(0);
    node.hostname = hostname.to_string();
    for flag in words[2].split(',') {
        match flag {
            "master" => node.role = Role::Primary,
            "slave" => node.role = Role::Replica(String::new()),
            "fail?" => node.pfail = true,
            "fail" => {
                node.fail = true;
                node.fail_time = now;
            }
            "handshake" => node.handshake = true,
            "noaddr" => node.noaddr = true,
            "nofailover" => node.nofailover = true,
            _ => {}
        }
    }
    if words[3] != "-" {
        node.role = Role::Replica(words[3].to_string());
    }
    if words[4] != "0" {
        node.ping_sent = now;
    }
    if words[5] != "0" {
        node.pong_received = now;
    }
    node.config_epoch = words[6].parse().unwrap_or(0);
    Ok(())
}

/// The slots and migrations a line lists.
fn load_slots(cluster: &mut Cluster, words: &[&str]) -> Result<(), Corrupted> {
    let number = cluster.find(words[0].as_bytes()).expect("loaded");
    for word in &words[8..] {
        if let Some(inner) = word.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            let (slot, arrow, other) = if let Some((s, id)) = inner.split_once("->-") {
                (s, '>', id)
            } else if let Some((s, id)) = inner.split_once("-<-") {
                (s, '<', id)
            } else {
                return Err(Corrupted(format!("migration {word}")));
            };
            let slot = slot_number(slot)?;
            let peer = match cluster.find(other.as_bytes()) {
                Some(n) => n,
                None => cluster.add(Node::new(other.to_string(), String::new(), 0, 0, 0)),
            };
            if arrow == '>' {
                cluster.migrating.insert(slot, peer);
            } else {
                cluster.importing.insert(slot, peer);
            }
            continue;
        }
        let (start, stop) = match word.split_once('-') {
            Some((a, b)) => (slot_number(a)?, slot_number(b)?),
            None => (slot_number(word)?, slot_number(word)?),
        };
        for slot in start..=stop {
            cluster.set_owner(slot, number);
        }
    }
    Ok(())
}

fn slot_number(text: &str) -> Result<u16, Corrupted> {
    text.parse::<u16>()
        .ok()
        .filter(|&s| (s as usize) < SLOTS)
        .ok_or_else(|| Corrupted(format!("slot {text}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_written_reads_back_the_same() {
        let mut cluster = Cluster::new(true, "a".repeat(40));
        cluster.end_implicit(true);
        cluster.myself_mut().ip = "127.0.0.1".into();
        (cluster.myself_mut().port, cluster.myself_mut().bus_port) = (7000, 17000);
        cluster.myself_mut().config_epoch = 3;
        let mut b = Node::new("b".repeat(40), "127.0.0.1".into(), 7001, 17001, 0);
        b.config_epoch = 5;
        b.hostname = "host-b".into();
        let b = cluster.add(b);
        let mut c = Node::new("c".repeat(40), "10.0.0.3".into(), 7002, 17002, 0);
        c.role = Role::Replica("b".repeat(40));
        c.fail = true;
        cluster.add(c);
        for slot in 0..100 {
            cluster.set_owner(slot, MYSELF);
        }
        cluster.set_owner(200, MYSELF);
        for slot in 100..200 {
            cluster.set_owner(slot, b);
        }
        cluster.migrating.insert(5, b);
        cluster.importing.insert(150, b);
        cluster.current_epoch = 7;
        cluster.last_vote_epoch = 6;
        let text = render(&cluster);
        assert!(text.starts_with(&format!(
            "{} 127.0.0.1:7000@17000 myself,master - 0 0 3 connected 0-99 200 [5->-{}] [150-<-{}]\n",
            "a".repeat(40),
            "b".repeat(40),
            "b".repeat(40)
        )));
        assert!(text.contains(",host-b master - 0 0 5 disconnected 100-199\n"));
        assert!(text.ends_with("vars currentEpoch 7 lastVoteEpoch 6\n"));
        let back = parse(&text, 1000).unwrap().unwrap();
        assert_eq!(render(&back), text);
        assert_eq!(back.myself().id, "a".repeat(40));
        assert!(!back.implicit);
    }

    #[test]
    fn a_fresh_nodes_file_gives_a_fresh_node() {
        let fresh = Cluster::new(true, "f".repeat(40));
        let text = render(&fresh);
        let back = parse(&text, 0).unwrap().unwrap();
        assert!(back.implicit && back.state_ok());
        assert_eq!(back.myself().id, "f".repeat(40));
        assert_eq!(parse("", 0).unwrap().map(|c| c.implicit), None);
    }

    #[test]
    fn corrupted_files_are_refused() {
        for text in [
            "x y z\n",
            &format!("{} 1.2.3.4:1@2 master - 0 0 0 connected\n", "a".repeat(40)),
            &format!(
                "{} 1.2.3.4:1@2 myself,master - 0 0 0 connected 16384\n",
                "a".repeat(40)
            ),
            &format!(
                "{} nonsense myself,master - 0 0 0 connected\n",
                "a".repeat(40)
            ),
            "vars currentEpoch\n",
        ] {
            assert!(parse(text, 0).is_err(), "{text}");
        }
    }
}
