//! Symbolic names of the server error numbers a caller is likely to branch on, as mysql2 names
//! them (`err.code`); any other number is named `ER_<errno>`.

/// The answers of a node that can no longer serve writes through any of its connections: 1047
/// (a Galera node outside the primary component, or not yet synced), 1290 (`read_only`, as a
/// demoted primary is), 1836 (read-only mode). A connection that got one leaves the pool.
pub const NODE_UNFIT: [u16; 3] = [1047, 1290, 1836];

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
