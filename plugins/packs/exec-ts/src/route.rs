//! Where a block runs: in a fresh realm of a warm worker (`realm.rs`), or
//! in a node process of its own (`node.rs`), as every block did before.
//! Decided before anything runs, from the code alone (swc's parse and its
//! scope resolution), so that a block means what it means under node:
//! the realm has ECMAScript's globals, `console`'s printing methods, the
//! timers and code mode, and nothing of node's. A block goes to node when it
//! - does not parse as a module (node then says why, as before);
//! - has `import` or `export`, `import()` or `import.meta`;
//! - names a global the realm lacks: node's own (`process`, `Buffer`,
//!   `fetch`, `URL`, `performance`, …), `require` and the other CommonJS
//!   names, any unknown name (node's `ReferenceError` says what exists), and
//!   `globalThis`, `eval` and `Function` (code built from strings or read
//!   off the global object could reach any of node's globals);
//! - uses `console` other than by calling `log`, `info`, `debug`, `warn` or
//!   `error`.

use swc_common::{GLOBALS, Globals, Mark, SyntaxContext};
use swc_ecma_ast::{
    Callee, Expr, Ident, MemberExpr, MemberProp, MetaPropExpr, MetaPropKind, ModuleDecl,
};
use swc_ecma_transforms_base::resolver;
use swc_ecma_visit::{Visit, VisitMutWith, VisitWith};

use crate::instrument::parse_module;

/// Where a block runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// A fresh realm in a warm worker.
    Realm,
    /// A node process of its own, and why.
    Node(String),
}

/// ECMAScript's own globals that a fresh realm has as node does. Left out:
/// `globalThis`, `eval` and `Function` (see the module docs) and what node
/// may treat apart (`SharedArrayBuffer`, `Atomics`, `WebAssembly`).
const ECMASCRIPT: &[&str] = &[
    "AggregateError",
    "Array",
    "ArrayBuffer",
    "BigInt",
    "BigInt64Array",
    "BigUint64Array",
    "Boolean",
    "DataView",
    "Date",
    "Error",
    "EvalError",
    "FinalizationRegistry",
    "Float32Array",
    "Float64Array",
    "Infinity",
    "Int16Array",
    "Int32Array",
    "Int8Array",
    "Intl",
    "JSON",
    "Map",
    "Math",
    "NaN",
    "Number",
    "Object",
    "Promise",
    "Proxy",
    "RangeError",
    "ReferenceError",
    "Reflect",
    "RegExp",
    "Set",
    "String",
    "Symbol",
    "SyntaxError",
    "TypeError",
    "URIError",
    "Uint16Array",
    "Uint32Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "WeakMap",
    "WeakRef",
    "WeakSet",
    "decodeURI",
    "decodeURIComponent",
    "encodeURI",
    "encodeURIComponent",
    "escape",
    "isFinite",
    "isNaN",
    "parseFloat",
    "parseInt",
    "undefined",
    "unescape",
];

/// What the realm's code mode adds to them (`realm.mjs`), as node's
/// globals and the prelude do.
const REALM: &[&str] = &[
    "setTimeout",
    "setInterval",
    "clearTimeout",
    "clearInterval",
    "queueMicrotask",
    "packhost",
    "PackError",
];

/// `console`'s methods the realm has.
const CONSOLE: &[&str] = &["log", "info", "debug", "warn", "error"];

/// The globals node (20 and later) has that a fresh realm lacks: a pack or
/// alias with one of these names is no global under node (the prelude
/// leaves it to `packhost.packs`), so not in the realm either.
pub const NODE_ONLY: &[&str] = &[
    "process",
    "global",
    "Buffer",
    "clearImmediate",
    "setImmediate",
    "URL",
    "URLSearchParams",
    "DOMException",
    "AbortController",
    "AbortSignal",
    "Event",
    "EventTarget",
    "TextEncoder",
    "TextDecoder",
    "TransformStream",
    "TransformStreamDefaultController",
    "WritableStream",
    "WritableStreamDefaultController",
    "WritableStreamDefaultWriter",
    "ReadableStream",
    "ReadableStreamDefaultReader",
    "ReadableStreamBYOBReader",
    "ReadableStreamBYOBRequest",
    "ReadableByteStreamController",
    "ReadableStreamDefaultController",
    "ByteLengthQueuingStrategy",
    "CountQueuingStrategy",
    "TextEncoderStream",
    "TextDecoderStream",
    "CompressionStream",
    "DecompressionStream",
    "clearInterval",
    "clearTimeout",
    "setInterval",
    "setTimeout",
    "queueMicrotask",
    "structuredClone",
    "atob",
    "btoa",
    "BroadcastChannel",
    "MessageChannel",
    "MessagePort",
    "MessageEvent",
    "Blob",
    "File",
    "Performance",
    "PerformanceEntry",
    "PerformanceMark",
    "PerformanceMeasure",
    "PerformanceObserver",
    "PerformanceObserverEntryList",
    "PerformanceResourceTiming",
    "performance",
    "fetch",
    "FormData",
    "Headers",
    "Request",
    "Response",
    "crypto",
    "Crypto",
    "CryptoKey",
    "SubtleCrypto",
    "CustomEvent",
    "navigator",
    "WebSocket",
];

/// Where the JavaScript module `js` runs; `code_name` says whether a name
/// is one of the caller's packs or aliases.
pub fn route(js: &str, code_name: impl Fn(&str) -> bool) -> Route {
    let mut module = match parse_module(js).1 {
        Ok((module, false)) => module,
        _ => return Route::Node("it does not parse as a module".into()),
    };
    GLOBALS.set(&Globals::new(), || {
        let unresolved = Mark::new();
        module.visit_mut_with(&mut resolver(unresolved, Mark::new(), false));
        let mut needs = Needs {
            unresolved: SyntaxContext::empty().apply_mark(unresolved),
            code_name: &code_name,
            node: None,
        };
        module.visit_with(&mut needs);
        match needs.node {
            Some(why) => Route::Node(why),
            None => Route::Realm,
        }
    })
}

/// Whether a free name is one the realm has.
fn in_realm(name: &str, code_name: &dyn Fn(&str) -> bool) -> bool {
    ECMASCRIPT.contains(&name)
        || REALM.contains(&name)
        || (code_name(name) && !NODE_ONLY.contains(&name))
}

/// The first thing of the code's that needs node.
struct Needs<'a> {
    unresolved: SyntaxContext,
    code_name: &'a dyn Fn(&str) -> bool,
    node: Option<String>,
}

impl Needs<'_> {
    fn free(&self, ident: &Ident) -> bool {
        ident.ctxt == self.unresolved
    }

    fn needs(&mut self, why: impl FnOnce() -> String) {
        if self.node.is_none() {
            self.node = Some(why());
        }
    }
}

impl Visit for Needs<'_> {
    fn visit_module_decl(&mut self, _: &ModuleDecl) {
        self.needs(|| "it imports or exports".into());
    }

    fn visit_callee(&mut self, callee: &Callee) {
        if let Callee::Import(_) = callee {
            self.needs(|| "it imports with `import()`".into());
        }
        callee.visit_children_with(self);
    }

    fn visit_meta_prop_expr(&mut self, meta: &MetaPropExpr) {
        if meta.kind == MetaPropKind::ImportMeta {
            self.needs(|| "it reads `import.meta`".into());
        }
    }

    fn visit_member_expr(&mut self, member: &MemberExpr) {
        if let (Expr::Ident(object), MemberProp::Ident(method)) = (&*member.obj, &member.prop)
            && object.sym == "console"
            && self.free(object)
            && CONSOLE.contains(&&*method.sym)
        {
            return;
        }
        member.visit_children_with(self);
    }

    fn visit_ident(&mut self, ident: &Ident) {
        if self.free(ident) && !in_realm(&ident.sym, self.code_name) {
            self.needs(|| format!("it names `{}`", ident.sym));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route_of(js: &str) -> Route {
        route(js, |name| ["proj", "projects"].contains(&name))
    }

    #[test]
    fn plain_code_and_code_mode_go_to_the_realm() {
        for js in [
            "1+1",
            "const xs = [1, 2, 3];\nconsole.log(xs.length);\nxs.reduce((a, b) => a + b)",
            "const listed = await proj.list();\nawait projects();\nlisted",
            "await packhost.call('proj.list', {}); new PackError({})",
            "setTimeout(() => console.error('later'), 1); new Map([[1, 'a']])",
            // Bound names shadow node's: a local `process` is no global.
            "const process = 1; function f(Buffer) { return Buffer } f(process)",
            "try { JSON.parse('x') } catch (e) { console.warn(e.message) }",
        ] {
            assert_eq!(route_of(js), Route::Realm, "{js}");
        }
    }

    #[test]
    fn what_needs_node_goes_to_node() {
        for (js, why) in [
            (
                "import fs from 'node:fs';\nfs.readdirSync('.')",
                "it imports or exports",
            ),
            ("export const a = 1;", "it imports or exports"),
            (
                "const fs = await import('node:fs')",
                "it imports with `import()`",
            ),
            ("import.meta.url", "it reads `import.meta`"),
            ("process.env.HOME", "it names `process`"),
            ("Buffer.from('x')", "it names `Buffer`"),
            ("require('fs')", "it names `require`"),
            ("__dirname", "it names `__dirname`"),
            ("await fetch('https://example.com')", "it names `fetch`"),
            ("performance.now()", "it names `performance`"),
            ("new URL('https://a')", "it names `URL`"),
            ("globalThis.process", "it names `globalThis`"),
            ("eval('1')", "it names `eval`"),
            ("new Function('return 1')()", "it names `Function`"),
            ("nosuchpack.list()", "it names `nosuchpack`"),
            ("console.table([1])", "it names `console`"),
            ("const log = console; log.log(1)", "it names `console`"),
            ("const a = ;", "it does not parse as a module"),
            ("return 1", "it does not parse as a module"),
        ] {
            assert_eq!(route_of(js), Route::Node(why.into()), "{js}");
        }
    }

    #[test]
    fn a_pack_named_like_a_node_global_is_nodes_global() {
        let route = route("await fetch({})", |name| name == "fetch");
        assert_eq!(route, Route::Node("it names `fetch`".into()));
    }
}
