//! What a script may do differs by `compat-version`, as between the real servers (the replies
//! below are Redis 7.0.15's and 7.4.1's, asked of them): from 7.4 the sandbox has an `os` table
//! holding `clock` alone, in EVAL scripts and in functions (not while a library loads).

use crate::support;
use support::Client;

fn eval(c: &mut Client, script: &str, keys: &[&str]) -> String {
    let numkeys = keys.len().to_string();
    let mut args = vec!["EVAL", script, &numkeys];
    args.extend_from_slice(keys);
    c.cmd(&args)
}

#[test]
fn as_7_4_the_sandbox_has_os_clock_alone() {
    let server = support::builder_as("7.4").start().unwrap();
    let mut c = Client::connect(server.addr());
    let names =
        "local t = {} for k, v in pairs(os) do t[#t + 1] = k .. ':' .. type(v) end return t";
    assert_eq!(eval(&mut c, names, &[]), "*1\r\n$14\r\nclock:function\r\n");
    assert_eq!(
        eval(&mut c, "return os.clock() >= 0 and os.clock() < 1e9", &[]),
        ":1\r\n"
    );
    let execute = eval(&mut c, "return os.execute('true')", &[]);
    assert!(
        execute.starts_with("-ERR user_script:1: attempt to call field 'execute' (a nil value)"),
        "{execute}"
    );
    let write = eval(&mut c, "os.clock = nil", &[]);
    assert!(
        write.contains("Attempt to modify a readonly table"),
        "{write}"
    );
    // A fresh VM after SCRIPT FLUSH is the same sandbox.
    c.cmd(&["SCRIPT", "FLUSH"]);
    assert_eq!(
        eval(&mut c, "return type(os.clock)", &[]),
        "$8\r\nfunction\r\n"
    );
    // Functions see it when they run, not while their library loads.
    let library =
        "#!lua name=l\nredis.register_function('f', function() return type(os.clock) end)";
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", library]), "$1\r\nl\r\n");
    assert_eq!(c.cmd(&["FCALL", "f", "0"]), "$8\r\nfunction\r\n");
    let at_load =
        "#!lua name=m\nlocal x = os\nredis.register_function('g', function() return 1 end)";
    let refused = c.cmd(&["FUNCTION", "LOAD", at_load]);
    assert!(
        refused.contains("Script attempted to access nonexistent global variable 'os'"),
        "{refused}"
    );
}

#[test]
fn as_7_0_the_sandbox_has_no_os() {
    let server = support::builder().start().unwrap();
    let mut c = Client::connect(server.addr());
    let reply = eval(&mut c, "return os.clock()", &[]);
    assert!(
        reply.starts_with(
            "-ERR user_script:1: Script attempted to access nonexistent global variable 'os'"
        ),
        "{reply}"
    );
    let library = "#!lua name=l\nredis.register_function('f', function() return type(os) end)";
    c.cmd(&["FUNCTION", "LOAD", library]);
    let reply = c.cmd(&["FCALL", "f", "0"]);
    assert!(
        reply.contains("nonexistent global variable 'os'"),
        "{reply}"
    );
}
