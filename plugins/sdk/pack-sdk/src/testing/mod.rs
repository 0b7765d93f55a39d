//! A pack's own tests (feature `test-support`): call the pack in-process as
//! any caller, and check results as MCP clients check them.
//!
//! [`PackTest`] builds a pack from its [`PackDef`] with a config, a host
//! `[identity]` and projects of your choosing, and calls its functions
//! through the same JSON path the host uses (arguments checked against the
//! input schema, the pack's runtime, panics caught), with a context whose
//! organisation and user you pick, so ownership rules are unit-tested per
//! pack:
//!
//! ```
//! use std::sync::Arc;
//! use pack_sdk::{Context, Empty, PackDef, PackError, codes, json};
//! use pack_sdk::owned::{Kind, Limits, Share, Table};
//! use pack_sdk::testing::{PackTest, callers::{ada, eve}};
//!
//! struct Sessions(Table<()>);
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Read {
//!     /// A session id from `open`.
//!     id: String,
//! }
//!
//! #[derive(serde::Serialize, schemars::JsonSchema)]
//! struct Session {
//!     id: String,
//! }
//!
//! async fn open(s: Arc<Sessions>, _: Empty, ctx: Context) -> Result<Session, PackError> {
//!     s.0.reserve(&ctx.owner())?.insert("s1", vec![], ());
//!     Ok(Session { id: "s1".into() })
//! }
//!
//! async fn read(s: Arc<Sessions>, args: Read, ctx: Context) -> Result<Session, PackError> {
//!     s.0.get(&ctx.owner(), &args.id)?;
//!     Ok(Session { id: args.id })
//! }
//!
//! fn my_pack() -> PackDef<Sessions> {
//!     PackDef::new("sessions", "Sessions", |_: Empty, _| {
//!         let limits = Limits { max: 4, per_owner: 2 };
//!         let table = Table::new(Kind::sessions("call `open` first"), Share::User, limits)?;
//!         Ok(Sessions(table))
//!     })
//!     .function("open", "Open a session", open)
//!     .function("read", "Read a session", read)
//! }
//!
//! // In a pack's tests: `#[tokio::test] async fn another_organisation_cannot_use_my_session()`.
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let pack = PackTest::build(my_pack).config(json!({})).start().unwrap();
//! let id = pack.call(&ada(), "open", json!({})).await.unwrap()["id"].clone();
//! let err = pack.call(&eve(), "read", json!({"id": id})).await.unwrap_err();
//! assert_eq!(err.code(), codes::SESSION_NOT_FOUND);
//! pack.shutdown().await;
//! # }
//! ```
//!
//! Every result it returns, and the result shape of every failure, has been
//! checked against the function's output schema (it panics otherwise). The
//! official MCP clients validate a tool's structured content against the
//! `outputSchema` it listed, on success and (the TypeScript SDK) on failure
//! too. The schemas come from your types, so a mismatch is a value the types
//! allow but the schema does not describe; [`check_result`] and
//! [`check_failure`] also catch it for values made directly, and
//! [`check_manifest`] checks the schemas themselves.
//!
//! A function's examples ([`Function::example`](crate::Function::example))
//! run as a test with [`check_examples`], or
//! [`PackTest::check_examples`] on a pack built with the config and projects
//! they need; [`PackTest::call_content`] shows what a function that returns
//! [`Content`](crate::Content) sends besides its value:
//!
//! ```
//! # use std::sync::Arc;
//! # use pack_sdk::{Context, Empty, Function, PackDef, PackError, json};
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Args {
//!     name: String,
//! }
//!
//! #[derive(serde::Serialize, schemars::JsonSchema)]
//! struct Greeting {
//!     text: String,
//!     #[serde(skip_serializing_if = "Vec::is_empty")]
//!     notes: Vec<String>,
//! }
//!
//! async fn greet(_: Arc<()>, args: Args, _: Context) -> Result<Greeting, PackError> {
//!     Ok(Greeting { text: format!("hello, {}", args.name), notes: vec![] })
//! }
//!
//! fn my_pack() -> PackDef<()> {
//!     PackDef::new("hello", "Greets people", |_: Empty, _| Ok(())).function_with(
//!         Function::new("greet", "Greet someone", greet)
//!             .example(json!({"name": "Ada"}), json!({"text": "hello, Ada"})),
//!     )
//! }
//!
//! // In a pack's tests: `#[test] fn results_fit_their_schemas()`.
//! pack_sdk::testing::check_manifest(my_pack).unwrap();
//! pack_sdk::testing::check_examples(my_pack).unwrap();
//! let sample = Greeting { text: "hi".into(), notes: vec!["a note".into()] };
//! pack_sdk::testing::check_result(&sample).unwrap();
//! ```

mod checks;
mod harness;

pub mod callers;
#[cfg(test)]
mod tests;

pub use checks::{check_block, check_failure, check_manifest, check_result, check_schema};
pub use harness::{PackTest, PackTestBuilder, check_examples};
