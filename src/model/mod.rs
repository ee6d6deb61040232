//! The on-disk format and the rows read from it: table names, contracts and DDL (`schema`), and
//! the one declaration of each row shape with its JSON codec (`codec`), and stored JSON judged as
//! `JSON.parse` judges it (`jsontext`). Calls only `error`.

pub(crate) mod codec;
pub(crate) mod jsontext;
pub(crate) mod schema;
