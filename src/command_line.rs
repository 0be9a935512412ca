//! redis-server's command line — `embedis-server [config-file] [--option value ...]` — for
//! every program that runs the server as its own process: the `embedis-server` binary, and the
//! console script of the Python package, which calls it with its arguments.
//!
//! Options use redis-server's names and meanings. `--port auto` binds a free port and prints one
//! line, `port=<n>`, on standard output as soon as the server listens, so that a test harness in
//! any language can spawn the server and learn where it is. Unknown options, and Redis options
//! embedis does not implement yet, stop start-up with a message saying which.
//!
//! With `--enable-debug-command yes|local` the server runs on a controllable clock (real time
//! until a test says otherwise), so that DEBUG CLOCK can move it.

use std::process::ExitCode;

use embedis_core::base::config::Access;
use embedis_core::{Clock, Config, ServerOptions};

/// Runs a server as redis-server would with these arguments (without the program's name), until
/// it is shut down; returns the process's exit code.
pub fn command_line(args: Vec<String>) -> ExitCode {
    run_command_line(args, None)
}

/// The `embedis-server` binary's entry: [`command_line`], with background saves written through
/// a child process that is this program again (started with
/// [`CHILD_FLAG`](embedis_core::base::formats::rdb_child::CHILD_FLAG), which this entry serves),
/// and diskless full syncs piped through one (started with
/// [`PIPE_FLAG`](embedis_core::base::formats::rdb_pipe_child::PIPE_FLAG)).
pub fn server_binary(args: Vec<String>) -> ExitCode {
    use embedis_core::base::formats::{rdb_child, rdb_pipe_child};
    match args.first().map(String::as_str) {
        Some(rdb_child::CHILD_FLAG) => {
            return ExitCode::from(rdb_child::child_main(&args[1..]) as u8);
        }
        Some(rdb_pipe_child::PIPE_FLAG) => {
            return ExitCode::from(rdb_pipe_child::pipe_child_main(&args[1..]) as u8);
        }
        _ => {}
    }
    // Before any thread starts: the process title is written over the command line's memory.
    embedis_core::base::proc_title::init();
    run_command_line(args, std::env::current_exe().ok())
}

fn run_command_line(mut args: Vec<String>, save_child: Option<std::path::PathBuf>) -> ExitCode {
    if args.iter().any(|a| a == "-v" || a == "--version") {
        println!(
            "embedis-server v={} (Redis 7.0.15 compatible)",
            env!("CARGO_PKG_VERSION")
        );
        return ExitCode::SUCCESS;
    }
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("Usage: embedis-server [/path/to/redis.conf] [--option value ...]");
        println!("       embedis-server --port auto   (prints port=<n> once listening)");
        println!("Options have redis-server's names: --port, --bind, --unixsocket, --requirepass, --databases, ...");
        return ExitCode::SUCCESS;
    }
    // `--port auto` is ours: take it out before the Redis-style parsing.
    let mut ephemeral_port = false;
    if let Some(i) = args
        .windows(2)
        .position(|w| w[0] == "--port" && w[1] == "auto")
    {
        args.drain(i..i + 2);
        ephemeral_port = true;
    }
    let (file, text) = match Config::args_to_text(&args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::FAILURE;
        }
    };
    let mut config = Config::default();
    // The command line's `--compat-version` decides which parameters the file may name.
    if let Err(e) = config.preset_compat_version(&text) {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    // The binary saves and listens as Redis does out of the box (a server inside a test process
    // saves nothing and listens on the loopback).
    config.save_points = embedis_core::base::config::DEFAULT_SAVE_POINTS.to_vec();
    config.bind = embedis_core::base::config::REDIS_DEFAULT_BIND
        .map(String::from)
        .to_vec();
    // The options are read as lines after the file's, in one pass, as Redis's
    // `loadServerConfig` appends them: `--save 100 100` after a file's `save 900 1` adds to it.
    let mut whole = String::new();
    if let Some(path) = &file {
        match std::fs::read_to_string(path) {
            Ok(contents) => {
                whole = contents;
                whole.push('\n');
            }
            Err(e) => {
                eprintln!("Fatal error, can't open config file '{path}': {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    whole.push_str(&text);
    if let Err(e) = config.load_text(&whole) {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    // DEBUG CLOCK works over the wire only on a controllable clock; it runs in real time until a
    // test moves it, so a server that allows DEBUG behaves as before until then.
    let clock = if config.enable_debug_command == Access::No {
        Clock::system()
    } else {
        Clock::controllable()
    };
    let options = ServerOptions {
        clock,
        config,
        ephemeral_port,
        config_file: file,
        handle_signals: true,
        save_child,
        load_at_start: true,
        load_in_background: true,
        ..ServerOptions::default()
    };
    let result = embedis_core::run(options, move |addr| {
        if ephemeral_port {
            if let Some(addr) = addr {
                println!("port={}", addr.port());
            }
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
