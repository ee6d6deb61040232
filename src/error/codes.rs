//! Symbolic names of the server error numbers a caller is likely to branch on, as mysql2 names
//! them (`err.code`); any other number is named `ER_<errno>`.

/// The answers of a node that can no longer serve writes through any of its connections: 1047
/// (a Galera node outside the primary component, or not yet synced), 1290 (`read_only`, as a
/// demoted primary is), 1836 (read-only mode), 3032 (`offline_mode`, a Group Replication member
/// that left its group with exit action OFFLINE_MODE), and Group Replication's refusals before a
/// transaction runs: 3782 / 3783 (a statement held while a new primary applied its backlog,
/// aborted because the plugin stopped or the member failed), 3796 (a consistency level the
/// member's state does not allow), 3799 (the plugin is stopping). Nothing of the statement was
/// applied. A connection that got one leaves the pool.
pub const NODE_UNFIT: [u16; 8] = [1047, 1290, 1836, 3032, 3782, 3783, 3796, 3799];

/// ER_OPERATION_NOT_ALLOWED_WHILE_PRIMARY_CHANGE_IS_RUNNING: a Group Replication primary blocks
/// new statements while `group_replication_set_as_primary()` hands its role over (a planned
/// switchover with a timeout); it is about to be a secondary. Its message names the function
/// (MariaDB uses 4094 for a note of its own).
pub const PRIMARY_CHANGE: u16 = 4094;
pub const SET_AS_PRIMARY: &str = "group_replication_set_as_primary";

/// ER_TRANSACTION_ROLLBACK_DURING_COMMIT: Group Replication's certification failure — another
/// member's transaction changed the same rows first (multi-primary). It is rolled back on every
/// member, so the whole unit may run again — as long as the member is still in its group: one
/// that has just left it answers its waiting commits the same way (`exec::run` asks the member).
pub const CERTIFICATION_FAILED: u16 = 3101;

/// Answers after which a write's outcome is unknown, as after a lost connection, and the server
/// cannot serve the connection again: 3100 ER_RUN_HOOK_ERROR, Group Replication could not finish
/// a commit with the group (the member is leaving it or has left it: expelled, stopping, in
/// ERROR) — the transaction may already have been sent to the group and committed there; 1053
/// ER_SERVER_SHUTDOWN, the server ended the statement (or the idle connection) because it is
/// shutting down.
pub const OUTCOME_UNKNOWN: [u16; 2] = [3100, 1053];

/// InnoDB's "Lock deadlock" (handler error 149) inside an ER_ERROR_DURING_COMMIT: on a Group
/// Replication member, a local transaction whose rows a certified remote one needed was rolled
/// back before it was sent to the group (it was still preparing) — like a deadlock, 1213.
pub const LOCK_DEADLOCK: &str = "Lock deadlock";

/// ER_ERROR_DURING_COMMIT: a Galera node that has just dropped out of the primary component
/// answers the writes it can no longer replicate with this (not 1047), its message naming
/// `NOT_PRIMARY`; the transaction was rolled back, nothing of it replicated.
pub const ERROR_DURING_COMMIT: u16 = 1180;
pub const NOT_PRIMARY: &str = "Not connected to Primary Component";

/// The name of server error `errno`.
pub fn name(errno: u16) -> String {
    let known = match errno {
        1022 => "ER_DUP_KEY",
        1040 => "ER_CON_COUNT_ERROR",
        1044 => "ER_DBACCESS_DENIED_ERROR",
        1045 => "ER_ACCESS_DENIED_ERROR",
        1046 => "ER_NO_DB_ERROR",
        // Also what a Galera node answers while it is not synced with its cluster.
        1047 => "ER_UNKNOWN_COM_ERROR",
        1048 => "ER_BAD_NULL_ERROR",
        1049 => "ER_BAD_DB_ERROR",
        1053 => "ER_SERVER_SHUTDOWN",
        1050 => "ER_TABLE_EXISTS_ERROR",
        1051 => "ER_BAD_TABLE_ERROR",
        1054 => "ER_BAD_FIELD_ERROR",
        1060 => "ER_DUP_FIELDNAME",
        1061 => "ER_DUP_KEYNAME",
        1062 => "ER_DUP_ENTRY",
        1064 => "ER_PARSE_ERROR",
        1105 => "ER_UNKNOWN_ERROR",
        1142 => "ER_TABLEACCESS_DENIED_ERROR",
        1146 => "ER_NO_SUCH_TABLE",
        1153 => "ER_NET_PACKET_TOO_LARGE",
        1180 => "ER_ERROR_DURING_COMMIT",
        1205 => "ER_LOCK_WAIT_TIMEOUT",
        1213 => "ER_LOCK_DEADLOCK",
        1227 => "ER_SPECIFIC_ACCESS_DENIED_ERROR",
        1264 => "ER_WARN_DATA_OUT_OF_RANGE",
        1290 => "ER_OPTION_PREVENTS_STATEMENT",
        1292 => "ER_TRUNCATED_WRONG_VALUE",
        1317 => "ER_QUERY_INTERRUPTED",
        1366 => "ER_TRUNCATED_WRONG_VALUE_FOR_FIELD",
        1370 => "ER_PROCACCESS_DENIED_ERROR",
        1406 => "ER_DATA_TOO_LONG",
        1451 => "ER_ROW_IS_REFERENCED_2",
        1452 => "ER_NO_REFERENCED_ROW_2",
        1836 => "ER_READ_ONLY_MODE",
        1927 => "ER_CONNECTION_KILLED",
        3024 => "ER_QUERY_TIMEOUT",
        3032 => "ER_SERVER_OFFLINE_MODE",
        3100 => "ER_RUN_HOOK_ERROR",
        3101 => "ER_TRANSACTION_ROLLBACK_DURING_COMMIT",
        4094 => "ER_OPERATION_NOT_ALLOWED_WHILE_PRIMARY_CHANGE_IS_RUNNING",
        _ => return format!("ER_{errno}"),
    };
    known.to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_known_and_unknown_numbers() {
        assert_eq!(super::name(1062), "ER_DUP_ENTRY");
        assert_eq!(super::name(4999), "ER_4999");
    }
}
