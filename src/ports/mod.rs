//! The port logic (docs/contract.md): for each operation of the Store, Queue and Timer ports,
//! the statements its unit of work sends, batched for one round trip each, with the shared
//! statements and the guarded outbox in `statements`, and the arguments of each operation as
//! `lib/` hands them over (`args`). Runs on any `exec::Exec`; never sees a
//! connection or a JS value.

pub(crate) mod args;
pub(crate) mod queue;
pub(crate) mod statements;
pub(crate) mod store;
pub(crate) mod timer;
