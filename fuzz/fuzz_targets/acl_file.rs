//! Fuzzes the ACL file loader (`parse_acl_file`, what ACL LOAD and an `aclfile` at start-up
//! go through): any bytes must give users or Redis's errors, never a panic. A file that loads
//! must describe its users (ACL SAVE's lines) as a file that loads to the same users, since
//! ACL SAVE then ACL LOAD must not change anyone's rights.
#![no_main]

use embedis_core::model::acl_users::Users;
use embedis_core::commands::acl::parse_acl_file;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let registry = embedis_core::commands::registry();
    let current = Users::new(b"");
    let Ok(users) = parse_acl_file(data, "fuzz.acl", &current, registry, false) else {
        return;
    };
    let describe = |users: &Users| -> Vec<u8> {
        let mut text = Vec::new();
        for (_, user) in users.iter() {
            text.extend(embedis_core::kernel::acl_rules::user_line(user, registry));
            text.push(b'\n');
        }
        text
    };
    let saved = describe(&users);
    let again = parse_acl_file(&saved, "fuzz.acl", &current, registry, false).unwrap_or_else(|e| {
        panic!(
            "a saved file does not load: {e}\n{}",
            String::from_utf8_lossy(&saved)
        )
    });
    assert_eq!(describe(&again), saved);
});
