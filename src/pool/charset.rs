//! The one character set every connection speaks: utf8mb4, the one it is opened with.
//!
//! The row codec reads every text cell as UTF-8, and the renderer writes only ASCII or
//! `_utf8mb4` hex (`literal`). mysql_async has no session tracking, so a user's `SET NAMES`
//! cannot be followed; connections are kept pinned instead. A user statement that may change
//! the session's character set is followed by `PIN` before anything else runs on its
//! connection, and a result set whose text columns arrive in another character set (a change
//! made where the scan below could not see it) fails its call with a connection error, so the
//! connection is discarded rather than misread.

use crate::error::{Error, Result};
use mysql_async::consts::ColumnType;
use mysql_async::Column;
use mysql_common::collations::{Collation, CollationId};

/// Puts a session in utf8mb4 with that character set's default collation on this server: the
/// collation a `_utf8mb4 X'…'` literal takes, so that it and a plain quoted literal compare
/// without "Illegal mix of collations" (mysql_async's handshake asks for utf8mb4_general_ci,
/// which is not the default on MySQL 8 or MariaDB ≥ 11.4). Sent when a connection opens (with
/// the isolation level, `pool::config`) and after a statement that may have changed it.
pub const PIN: &str = "SET NAMES utf8mb4";

/// Whether `sql` may leave its session in another character set: it names one of the settings
/// (`SET NAMES`, `SET CHARACTER SET` / `CHARSET`, `character_set_*`, `collation_*`) or runs
/// code whose body cannot be seen here (`CALL`, `EXECUTE`). A false positive costs one
/// `SET NAMES` round trip; a miss is caught by `check_columns`.
pub fn may_change(sql: &str) -> bool {
    sql.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .any(|word| {
            let w = word.to_ascii_lowercase();
            matches!(
                w.as_str(),
                "names" | "charset" | "character" | "call" | "execute"
            ) || w.starts_with("character_set")
                || w.starts_with("collation")
        })
}

/// Whether text in `collation` reaches us as UTF-8 (or as raw bytes). Collations this driver
/// does not know (MariaDB's UCA 14 ids) are all Unicode ones, and pass.
fn reads_as_utf8(collation: u16) -> bool {
    let id = CollationId::from(collation);
    if id == CollationId::UNKNOWN_COLLATION_ID {
        return true;
    }
    matches!(
        Collation::resolve(id).charset(),
        "utf8mb4" | "utf8mb3" | "utf8" | "ascii" | "binary"
    )
}

/// Refuses a result set with a text column in a character set the codec cannot read.
pub fn check_columns(columns: &[Column]) -> Result<()> {
    use ColumnType::*;
    let foreign = columns.iter().find(|c| {
        matches!(
            c.column_type(),
            MYSQL_TYPE_VARCHAR
                | MYSQL_TYPE_VAR_STRING
                | MYSQL_TYPE_STRING
                | MYSQL_TYPE_BLOB
                | MYSQL_TYPE_TINY_BLOB
                | MYSQL_TYPE_MEDIUM_BLOB
                | MYSQL_TYPE_LONG_BLOB
                | MYSQL_TYPE_JSON
                | MYSQL_TYPE_ENUM
                | MYSQL_TYPE_SET
        ) && !reads_as_utf8(c.character_set())
    });
    match foreign {
        None => Ok(()),
        Some(c) => Err(Error::Connection {
            code: "ER_CHARSET_CHANGED",
            message: format!(
                "column {} arrived in character set {} instead of utf8mb4: the session's \
                 character set was changed, which this pool does not follow; the connection \
                 was closed (keep connections in utf8mb4, see docs/configuration.md)",
                c.name_str(),
                Collation::resolve(CollationId::from(c.character_set())).charset()
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sees_statements_that_may_change_the_character_set() {
        for sql in [
            "SET NAMES latin1",
            "set names 'gbk'",
            "/*!40101 SET NAMES utf8 */",
            "SET CHARACTER SET big5",
            "SET CHARSET sjis",
            "SET @@session.character_set_results = NULL",
            "SET collation_connection = latin1_swedish_ci",
            "CALL p()",
            "EXECUTE s",
        ] {
            assert!(may_change(sql), "{sql}");
        }
        assert!(!may_change("SELECT recall, named FROM t"));
        assert!(!may_change("UPDATE run SET status = 'done'"));
    }

    #[test]
    fn knows_which_collations_read_as_utf8() {
        assert!(reads_as_utf8(45)); // utf8mb4_general_ci
        assert!(reads_as_utf8(46)); // utf8mb4_bin
        assert!(reads_as_utf8(33)); // utf8mb3_general_ci
        assert!(reads_as_utf8(63)); // binary
        assert!(!reads_as_utf8(8)); // latin1_swedish_ci
        assert!(!reads_as_utf8(28)); // gbk_chinese_ci
        assert!(!reads_as_utf8(1)); // big5_chinese_ci
        assert!(!reads_as_utf8(13)); // sjis_japanese_ci
    }
}
