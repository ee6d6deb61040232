//! Connections and what is sent on them: pool options (`config`), the rendering of values into
//! literals that mean the same in every session state (`literal`), and the one character set
//! every connection keeps (`charset`), the hosts of a pool with several (`hosts`), and what a
//! connection carries from one borrower to the next (`session`); the server's answer to a login
//! the driver cannot finish (`auth`); what a Group Replication member says of itself (`group`).
//! Calls only `error`.

pub(crate) mod auth;
pub(crate) mod charset;
pub(crate) mod config;
pub(crate) mod group;
pub(crate) mod hosts;
pub(crate) mod literal;
pub(crate) mod session;
