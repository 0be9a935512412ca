//! LATENCY: the latency monitor's events (LATEST, HISTORY, RESET, GRAPH, DOCTOR) and every
//! command's latency distribution (HISTOGRAM).
//!
//! The data is kept by [`crate::model::latency`]: `call` records each command's run time in its
//! histogram and, past `latency-monitor-threshold`, a `command` / `fast-command` event; the
//! active expiry cycle records `expire-cycle`. Reply shapes are Redis 7.0's; the human-readable
//! texts (DOCTOR, GRAPH) are our own words.

use std::fmt::Write as _;

use crate::base::error::{CmdResult, Error};
use crate::commands::common::write_help;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::{Acl, Command, CommandSpec, Flags};
use crate::model::latency::EventHistory;

const HELP: &[&str] = &[
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Describes the latency events recorded, in words.",
    "GRAPH <event>",
    "    Draws the samples of <event> as text.",
    "HISTORY <event>",
    "    Returns the samples of <event>: UNIX time and latency in milliseconds.",
    "LATEST",
    "    Returns the latest and largest sample of every event.",
    "RESET [<event> ...]",
    "    Forgets the samples of the named events (default: all of them).",
    "HISTOGRAM [COMMAND ...]",
    "    Returns the cumulative distribution of run times of the named commands (a",
    "    container names all its subcommands), or of every command that ran.",
    "HELP",
    "    Prints this help.",
];

fn help(ctx: &mut Ctx<'_>) -> CmdResult {
    write_help(ctx, HELP);
    Ok(())
}

fn latest(ctx: &mut Ctx<'_>) -> CmdResult {
    let events = &ctx.server.latency.events;
    let with_samples: Vec<(&str, &EventHistory)> = events
        .iter()
        .filter(|(_, h)| !h.samples.is_empty())
        .map(|(name, h)| (*name, h))
        .collect();
    ctx.out.array(with_samples.len());
    for (name, history) in with_samples {
        let last = history.samples.back().expect("non-empty");
        ctx.out.array(4);
        ctx.out.bulk(name.as_bytes());
        ctx.out.integer(last.time);
        ctx.out.integer(last.latency_ms as i64);
        ctx.out.integer(history.max_ms as i64);
    }
    Ok(())
}

fn history(ctx: &mut Ctx<'_>) -> CmdResult {
    let Some((_, history)) = ctx.server.latency.get(ctx.arg(2)) else {
        ctx.out.array(0);
        return Ok(());
    };
    ctx.out.array(history.samples.len());
    for sample in &history.samples {
        ctx.out.array(2);
        ctx.out.integer(sample.time);
        ctx.out.integer(sample.latency_ms as i64);
    }
    Ok(())
}

fn reset(ctx: &mut Ctx<'_>) -> CmdResult {
    let names: Vec<&[u8]> = ctx.args[2..].iter().map(|a| a.as_ref()).collect();
    let n = ctx.server.latency.reset(&names);
    ctx.out.integer(n as i64);
    Ok(())
}

/// Draws an event's samples, oldest on the left, as columns of `#` scaled between the lowest
/// and highest sample, with each sample's age under it.
fn graph(ctx: &mut Ctx<'_>) -> CmdResult {
    let name = ctx.arg(2);
    let Some((event, history)) = ctx.server.latency.get(name) else {
        return Err(Error::bytes(
            [
                &b"ERR No samples available for event '"[..],
                crate::base::cstr::c_str(name),
                b"'",
            ]
            .concat(),
        ));
    };
    let samples: Vec<_> = history.samples.iter().collect();
    let high = samples.iter().map(|s| s.latency_ms).max().unwrap_or(0);
    let low = samples.iter().map(|s| s.latency_ms).min().unwrap_or(0);
    let mut text = format!(
        "{event} - high {high} ms, low {low} ms (all time high {} ms)\n",
        history.max_ms
    );
    text.push_str(&"-".repeat(80));
    text.push('\n');
    const ROWS: u64 = 4;
    for row in (1..=ROWS).rev() {
        for s in &samples {
            let level = if high == low {
                ROWS
            } else {
                1 + (s.latency_ms - low) * (ROWS - 1) / (high - low)
            };
            text.push(if level >= row { '#' } else { ' ' });
        }
        text.push('\n');
    }
    let now_s = ctx.now_ms.div_euclid(1000);
    let ages: Vec<String> = samples
        .iter()
        .map(|s| format!("{}s", (now_s - s.time).max(0)))
        .collect();
    let _ = writeln!(text, "ages, oldest first: {}", ages.join(" "));
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

fn doctor(ctx: &mut Ctx<'_>) -> CmdResult {
    let threshold = ctx.server.config.latency_monitor_threshold;
    let events = &ctx.server.latency.events;
    let mut text = String::new();
    if events.is_empty() {
        if threshold == 0 {
            text.push_str(
                "The latency monitor is off: no events are recorded. Turn it on with \
                 CONFIG SET latency-monitor-threshold <milliseconds>.\n",
            );
        } else {
            let _ = writeln!(
                text,
                "No event has reached the latency monitor's threshold of {threshold} ms."
            );
        }
    } else {
        let _ = writeln!(
            text,
            "Events that reached the latency monitor's threshold of {threshold} ms:\n"
        );
        for (i, (name, history)) in events.iter().enumerate() {
            let n = history.samples.len().max(1) as u64;
            let sum: u64 = history.samples.iter().map(|s| s.latency_ms).sum();
            let _ = writeln!(
                text,
                "{}. {name}: {} samples, average {} ms, highest ever {} ms.",
                i + 1,
                history.samples.len(),
                sum / n,
                history.max_ms
            );
        }
        text.push_str(
            "\nCommand events: SLOWLOG GET names the slow commands. Expiry events: deleting \
             or expiring large values blocks the server while they are freed; smaller values \
             spread the work.\n",
        );
    }
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// The commands LATENCY HISTOGRAM reports: the named ones (a container names every subcommand;
/// unknown names are skipped), or all, and of those only the ones that ran.
fn histogram(ctx: &mut Ctx<'_>) -> CmdResult {
    let registry = ctx.registry;
    let mut chosen: Vec<&Command> = Vec::new();
    if ctx.argc() == 2 {
        chosen.extend(registry.commands.iter().filter(|c| !c.is_container()));
    } else {
        for name in &ctx.args[2..] {
            let Some(command) = registry.by_full_name(name) else {
                continue;
            };
            if command.is_container() {
                chosen.extend(registry.subcommands_of(command));
            } else {
                chosen.push(command);
            }
        }
    }
    chosen.dedup_by_key(|c| c.id);
    let stats = &ctx.server.command_stats;
    chosen.retain(|c| stats[c.id].histogram.count() > 0);
    ctx.out.map(chosen.len());
    for command in chosen {
        let histogram = &stats[command.id].histogram;
        ctx.out.bulk(command.full_name.as_bytes());
        ctx.out.map(2);
        ctx.out.bulk(b"calls");
        ctx.out.integer(histogram.count() as i64);
        ctx.out.bulk(b"histogram_usec");
        let cdf = histogram.cdf();
        ctx.out.map(cdf.len());
        for (usec, count) in cdf {
            ctx.out.integer(usec as i64);
            ctx.out.integer(count as i64);
        }
    }
    Ok(())
}

const ADMIN: Flags = Flags::ADMIN
    .union(Flags::NOSCRIPT)
    .union(Flags::LOADING)
    .union(Flags::STALE);

const PER_NODE: &[&str] = &[
    "nondeterministic_output",
    "request_policy:all_nodes",
    "response_policy:special",
];

static SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("doctor", 2, doctor)
        .flags(ADMIN)
        .tips(PER_NODE)
        .doc(
            "server",
            "2.8.13",
            "O(1)",
            "Describes the latency events recorded, in words.",
            "",
        ),
    CommandSpec::new("histogram", -2, histogram)
        .flags(ADMIN)
        .tips(PER_NODE)
        .doc(
            "server",
            "7.0.0",
            "O(N) where N is the number of commands with latency information being retrieved.",
            "Returns the cumulative distribution of run times of the named commands, or of all.",
            "[command...]",
        ),
    CommandSpec::new("help", 2, help)
        .flags(Flags::LOADING.union(Flags::STALE))
        .doc(
            "server",
            "2.8.13",
            "O(1)",
            "Lists the LATENCY subcommands.",
            "",
        ),
    CommandSpec::new("latest", 2, latest)
        .flags(ADMIN)
        .tips(PER_NODE)
        .doc(
            "server",
            "2.8.13",
            "O(1)",
            "Returns the latest and largest sample of every event.",
            "",
        ),
    CommandSpec::new("graph", 3, graph)
        .flags(ADMIN)
        .tips(PER_NODE)
        .doc(
            "server",
            "2.8.13",
            "O(1)",
            "Draws an event's samples as text.",
            "event:string",
        ),
    CommandSpec::new("reset", -2, reset)
        .flags(ADMIN)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc(
            "server",
            "2.8.13",
            "O(1)",
            "Forgets the samples of the named events, or of all.",
            "[event:string...]",
        ),
    CommandSpec::new("history", 3, history)
        .flags(ADMIN)
        .tips(PER_NODE)
        .doc(
            "server",
            "2.8.13",
            "O(1)",
            "Returns an event's samples: UNIX time and latency in milliseconds.",
            "event:string",
        ),
];

pub static COMMANDS: &[CommandSpec] = &[CommandSpec::container("latency", SUBCOMMANDS)
    .acl(Acl::NONE)
    .doc(
        "server",
        "2.8.13",
        "Depends on subcommand.",
        "Container for the latency diagnostics commands.",
        "",
    )];
