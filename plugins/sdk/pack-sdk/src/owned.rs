//! State that belongs to whoever created it.
//!
//! Whatever a pack keeps between calls (kernels, notebook sessions, stored
//! results) belongs to the [`Owner`] of the call that created it: the
//! organisation and user the host took from the transport
//! ([`Context::owner`](crate::Context::owner)), never from arguments. Anyone
//! else gets exactly what an unknown id gets, listings show only the caller's
//! own, and limits count per owner as well as for the whole host.
//!
//! - [`Share`] is a pack's rule for who else may use an owner's state: only
//!   the same user (`share = "user"`, the default) or every member of the
//!   organisation (`share = "org"`). Packs take it from their config as
//!   `share`.
//! - [`Table`] keeps resources in memory: insert with an owner (after
//!   [`Table::reserve`] took a slot under the limits), get, list and remove
//!   for an owner, expire the idle ones.
//! - [`Ownership`] is the rule for state a pack records itself (on disk):
//!   the owner is stored beside it, and a record from before owners were
//!   stored belongs to the host's `[identity]`
//!   ([`Context::host_identity`](crate::Context::host_identity)).
//!
//! ```
//! use pack_sdk::owned::{Kind, Limits, Owner, Share, Table};
//!
//! let table = Table::new(Kind::sessions("create one with demo.open()"), Share::User,
//!     Limits { max: 8, per_owner: 2 }).unwrap();
//! let ada = Owner::new("acme", "ada");
//! table.reserve(&ada).unwrap().insert("s1", vec![], "state of s1");
//! assert_eq!(*table.get(&ada, "s1").unwrap().value(), "state of s1");
//! // Another organisation's caller: the same as an id nobody has.
//! let eve = Owner::new("evil", "eve");
//! let err = table.get(&eve, "s1").err().unwrap();
//! assert_eq!(err.code(), "SESSION_NOT_FOUND");
//! assert_eq!(err.message(), "no session `s1` (you have no sessions)");
//! ```

use std::{
    collections::BTreeMap,
    future::Future,
    ops::Deref,
    sync::{
        Arc, Mutex, MutexGuard, OnceLock, Weak,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use pack_api::Owner;

use crate::{Context, PackError, codes};

/// Who may use state besides the user who created it: a pack's `share`
/// setting (`"user"`, the default, or `"org"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Share {
    /// Only the user who created it (in their organisation).
    #[default]
    User,
    /// Every user of the organisation that created it.
    Org,
}

impl Share {
    /// Whether `caller` may use what `owner` created.
    pub fn allows(self, owner: &Owner, caller: &Owner) -> bool {
        owner.org == caller.org && (self == Self::Org || owner.user == caller.user)
    }

    /// Who a per-owner limit counts: a user, or with `share = "org"` the
    /// whole organisation.
    fn unit(self) -> &'static str {
        match self {
            Self::User => "you have",
            Self::Org => "your organisation has",
        }
    }
}

/// The rule for state a pack records itself, such as files on disk: the
/// owner is stored with it, and a record without one (written before owners
/// were) belongs to the host's `[identity]`, the caller on stdio.
///
/// The host says who that is in each call's catalog: [`Self::caller`] reads
/// it on the first call and keeps it. Until then (and from a host too old
/// to say) an ownerless record is nobody's.
#[derive(Debug)]
pub struct Ownership {
    share: Share,
    /// Asked once: `None` inside from a host that does not say.
    unowned: OnceLock<Option<Owner>>,
}

impl Ownership {
    /// The pack's `share` setting.
    pub fn new(share: Share) -> Self {
        Self {
            share,
            unowned: OnceLock::new(),
        }
    }

    /// The same with the owner of ownerless records known (tests).
    pub fn with_unowned(share: Share, unowned: Owner) -> Self {
        Self {
            share,
            unowned: OnceLock::from(Some(unowned)),
        }
    }

    /// The sharing rule.
    pub fn share(&self) -> Share {
        self.share
    }

    /// The caller of `ctx` ([`Context::owner`]); the first call also tells
    /// the rule who owns ownerless records.
    pub fn caller(&self, ctx: &Context) -> Owner {
        self.unowned.get_or_init(|| ctx.host_identity());
        ctx.owner()
    }

    /// Whether `caller` may use a record whose stored owner is `recorded`.
    pub fn allows(&self, recorded: Option<&Owner>, caller: &Owner) -> bool {
        match recorded.or(self.unowned.get().and_then(Option::as_ref)) {
            Some(owner) => self.share.allows(owner, caller),
            None => false,
        }
    }
}

/// How a [`Table`]'s messages name what it holds.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    /// One item: `session`. Limits are named after it: `max_sessions` and
    /// `max_sessions_per_owner`.
    pub noun: &'static str,
    /// The code of an id the caller cannot use: `SESSION_NOT_FOUND`.
    pub not_found: &'static str,
    /// Said with it: how to create or list them.
    pub not_found_help: &'static str,
    /// Said with `LIMIT_EXCEEDED`: how to free one.
    pub limit_help: &'static str,
}

impl Kind {
    /// Sessions: `SESSION_NOT_FOUND`, and `help` with it.
    pub fn sessions(help: &'static str) -> Self {
        Self {
            noun: "session",
            not_found: codes::SESSION_NOT_FOUND,
            not_found_help: help,
            limit_help: "close one of yours, or raise the limit in the pack's config",
        }
    }

    /// What a caller gets for an id it cannot use, whether nobody or
    /// somebody else holds it: the caller's own ids (`mine`) and no others.
    pub fn not_found(&self, id: &str, mine: &[String]) -> PackError {
        let noun = self.noun;
        let listed = if mine.is_empty() {
            format!("you have no {noun}s")
        } else {
            format!("your {noun}s: {}", mine.join(", "))
        };
        PackError::new(self.not_found, format!("no {noun} `{id}` ({listed})"))
            .with_help(self.not_found_help)
    }
}

/// How many items a [`Table`] holds at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// For the whole host (config `max_<noun>s`).
    pub max: usize,
    /// For one owner: a user, or with `share = "org"` an organisation
    /// (config `max_<noun>s_per_owner`).
    pub per_owner: usize,
}

impl Limits {
    /// A limit of 0 is refused, naming its config key: nothing could ever be
    /// made.
    pub fn validate(&self, kind: &Kind) -> Result<(), PackError> {
        for (value, key) in [
            (self.max, format!("max_{}s", kind.noun)),
            (self.per_owner, format!("max_{}s_per_owner", kind.noun)),
        ] {
            if value == 0 {
                return Err(PackError::invalid_argument(format!(
                    "`{key}` is 0; it must be at least 1"
                )));
            }
        }
        Ok(())
    }

    /// Whether one more item fits: `held` of the owner's (among them `mine`,
    /// the ids listed to the caller) and `total` on the host. The error names
    /// neither the ids nor the number of anyone else's.
    pub fn check(
        &self,
        kind: &Kind,
        share: Share,
        mine: &[String],
        held: usize,
        total: usize,
    ) -> Result<(), PackError> {
        let noun = kind.noun;
        let listed = if mine.is_empty() {
            String::new()
        } else {
            format!(": {}", mine.join(", "))
        };
        if held >= self.per_owner {
            return Err(PackError::new(
                codes::LIMIT_EXCEEDED,
                format!(
                    "{} {held} {noun}(s) open, the most one owner may have is {} \
                     (`max_{noun}s_per_owner`){listed}",
                    share.unit(),
                    self.per_owner,
                ),
            )
            .with_help(kind.limit_help));
        }
        if total >= self.max {
            return Err(PackError::new(
                codes::LIMIT_EXCEEDED,
                format!(
                    "this host has reached its limit of {} open {noun}s (`max_{noun}s`){}",
                    self.max,
                    if mine.is_empty() {
                        String::new()
                    } else {
                        format!("; yours{listed}")
                    }
                ),
            )
            .with_help(kind.limit_help));
        }
        Ok(())
    }
}

/// One item of a [`Table`]: the value, its id, owner, and when it was last
/// used.
pub struct Entry<T> {
    id: String,
    aliases: Vec<String>,
    owner: Owner,
    value: T,
    last_used: Mutex<Instant>,
    leases: AtomicUsize,
}

impl<T> Entry<T> {
    /// Its id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Other ids that name it too (a kernel id beside a session id).
    pub fn aliases(&self) -> &[String] {
        &self.aliases
    }

    /// Who created it.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// The value.
    pub fn value(&self) -> &T {
        &self.value
    }

    /// How long since a [`Lease`] on it was taken or given back.
    pub fn idle_for(&self) -> Duration {
        lock(&self.last_used).elapsed()
    }

    /// Whether a [`Lease`] on it is held (it is in use, so it never expires).
    pub fn in_use(&self) -> bool {
        self.leases.load(Ordering::SeqCst) > 0
    }

    fn named(&self, id: &str) -> bool {
        self.id == id || self.aliases.iter().any(|a| a == id)
    }

    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }
}

impl<T> Deref for Entry<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.value
    }
}

/// An item taken for use ([`Table::get`]): it does not expire while held,
/// and counts as used when taken and when dropped.
pub struct Lease<T>(Arc<Entry<T>>);

impl<T> Lease<T> {
    fn new(entry: Arc<Entry<T>>) -> Self {
        entry.leases.fetch_add(1, Ordering::SeqCst);
        entry.touch();
        Self(entry)
    }

    /// The entry itself, to keep beyond the lease.
    pub fn entry(&self) -> &Arc<Entry<T>> {
        &self.0
    }
}

impl<T> Deref for Lease<T> {
    type Target = Entry<T>;

    fn deref(&self) -> &Entry<T> {
        &self.0
    }
}

impl<T> Drop for Lease<T> {
    fn drop(&mut self) {
        self.0.touch();
        self.0.leases.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Room for one item, taken under the limits by [`Table::reserve`] before
/// the (slow) work of making it; given back on drop unless inserted.
pub struct Slot<'a, T> {
    table: &'a Table<T>,
    owner: Owner,
}

impl<T> Slot<'_, T> {
    /// Add the item made for this slot, owned by the caller that reserved
    /// it; `aliases` are other ids that name it. The pack makes ids unique
    /// (random ones: they are not secrets, but need not be guessable).
    pub fn insert(self, id: impl Into<String>, aliases: Vec<String>, value: T) -> Arc<Entry<T>> {
        let entry = Arc::new(Entry {
            id: id.into(),
            aliases,
            owner: self.owner.clone(),
            value,
            last_used: Mutex::new(Instant::now()),
            leases: AtomicUsize::new(0),
        });
        self.table
            .rows()
            .entries
            .insert(entry.id.clone(), Arc::clone(&entry));
        entry
    }
}

impl<T> Drop for Slot<'_, T> {
    fn drop(&mut self) {
        let mut rows = self.table.rows();
        if let Some(at) = rows.starting.iter().position(|o| *o == self.owner) {
            rows.starting.swap_remove(at);
        }
    }
}

struct Rows<T> {
    entries: BTreeMap<String, Arc<Entry<T>>>,
    /// The owners of slots reserved and not yet filled.
    starting: Vec<Owner>,
}

/// Resources kept in memory, each with its owner: what a pack's sessions
/// table is. See the [module](self) docs.
pub struct Table<T> {
    kind: Kind,
    share: Share,
    limits: Limits,
    rows: Mutex<Rows<T>>,
}

impl<T> Table<T> {
    fn rows(&self) -> MutexGuard<'_, Rows<T>> {
        lock(&self.rows)
    }
}

impl<T: Send + Sync + 'static> Table<T> {
    /// An empty table; a limit of 0 is refused, naming its config key.
    pub fn new(kind: Kind, share: Share, limits: Limits) -> Result<Self, PackError> {
        limits.validate(&kind)?;
        Ok(Self {
            kind,
            share,
            limits,
            rows: Mutex::new(Rows {
                entries: BTreeMap::new(),
                starting: Vec::new(),
            }),
        })
    }

    /// The sharing rule.
    pub fn share(&self) -> Share {
        self.share
    }

    /// The limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Room for one more item of `caller`, or `LIMIT_EXCEEDED` naming the
    /// limit reached (and only the caller's own ids).
    pub fn reserve(&self, caller: &Owner) -> Result<Slot<'_, T>, PackError> {
        let mut rows = self.rows();
        let mine = visible_ids(&rows, self.share, caller);
        let mine_starting = rows
            .starting
            .iter()
            .filter(|o| self.share.allows(o, caller))
            .count();
        let total = rows.entries.len() + rows.starting.len();
        self.limits.check(
            &self.kind,
            self.share,
            &mine,
            mine.len() + mine_starting,
            total,
        )?;
        rows.starting.push(caller.clone());
        Ok(Slot {
            table: self,
            owner: caller.clone(),
        })
    }

    /// The item `id` (or one it is an alias of) if `caller` may use it; else
    /// exactly what an unknown id gets, listing only the caller's own ids.
    pub fn get(&self, caller: &Owner, id: &str) -> Result<Lease<T>, PackError> {
        let rows = self.rows();
        match self.find(&rows, caller, id) {
            Some(entry) => Ok(Lease::new(entry)),
            None => Err(self.not_found(&rows, caller, id)),
        }
    }

    /// Remove the item `id` of `caller` (not found as in [`Self::get`]).
    pub fn take(&self, caller: &Owner, id: &str) -> Result<Arc<Entry<T>>, PackError> {
        let mut rows = self.rows();
        match self.find(&rows, caller, id) {
            Some(entry) => {
                rows.entries.remove(&entry.id);
                Ok(entry)
            }
            None => Err(self.not_found(&rows, caller, id)),
        }
    }

    /// The items `caller` may use, by id.
    pub fn list(&self, caller: &Owner) -> Vec<Arc<Entry<T>>> {
        self.rows()
            .entries
            .values()
            .filter(|e| self.share.allows(&e.owner, caller))
            .cloned()
            .collect()
    }

    /// Remove and return the items idle longer than `ttl` and not in use.
    pub fn expired(&self, ttl: Duration) -> Vec<Arc<Entry<T>>> {
        let mut rows = self.rows();
        let ids: Vec<String> = rows
            .entries
            .values()
            .filter(|e| !e.in_use() && e.idle_for() > ttl)
            .map(|e| e.id.clone())
            .collect();
        ids.iter()
            .filter_map(|id| rows.entries.remove(id))
            .collect()
    }

    /// Remove and return every item (the pack is shutting down).
    pub fn drain(&self) -> Vec<Arc<Entry<T>>> {
        std::mem::take(&mut self.rows().entries)
            .into_values()
            .collect()
    }

    /// Every `ttl / 4` (between 250 ms and 60 s), hand the items idle longer
    /// than `ttl` to `close`. Runs on the current tokio runtime (a pack's
    /// constructor has one) until the table is dropped.
    pub fn spawn_reaper<F, Fut>(self: &Arc<Self>, ttl: Duration, close: F)
    where
        F: Fn(Arc<Entry<T>>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let table: Weak<Self> = Arc::downgrade(self);
        let every = reap_every(ttl);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(table) = table.upgrade() else {
                    return;
                };
                let expired = table.expired(ttl);
                drop(table);
                for entry in expired {
                    close(entry).await;
                }
            }
        });
    }

    fn find(&self, rows: &Rows<T>, caller: &Owner, id: &str) -> Option<Arc<Entry<T>>> {
        let mine = |e: &&Arc<Entry<T>>| self.share.allows(&e.owner, caller);
        rows.entries
            .get(id)
            .filter(mine)
            .or_else(|| rows.entries.values().filter(mine).find(|e| e.named(id)))
            .cloned()
    }

    fn not_found(&self, rows: &Rows<T>, caller: &Owner, id: &str) -> PackError {
        self.kind
            .not_found(id, &visible_ids(rows, self.share, caller))
    }
}

/// How often state idle for `ttl` is looked for: a quarter of it, between
/// 250 ms and a minute.
pub fn reap_every(ttl: Duration) -> Duration {
    (ttl / 4).clamp(Duration::from_millis(250), Duration::from_secs(60))
}

fn visible_ids<T>(rows: &Rows<T>, share: Share, caller: &Owner) -> Vec<String> {
    rows.entries
        .values()
        .filter(|e| share.allows(&e.owner, caller))
        .map(|e| e.id.clone())
        .collect()
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(share: Share, max: usize, per_owner: usize) -> Table<&'static str> {
        Table::new(
            Kind::sessions("create one"),
            share,
            Limits { max, per_owner },
        )
        .unwrap()
    }

    fn ada() -> Owner {
        Owner::new("acme", "ada")
    }
    fn bob() -> Owner {
        Owner::new("acme", "bob")
    }
    fn eve() -> Owner {
        Owner::new("evil", "eve")
    }

    #[test]
    fn another_owner_gets_what_an_unknown_id_gets() {
        let t = table(Share::User, 8, 8);
        t.reserve(&ada())
            .unwrap()
            .insert("s1", vec!["k1".into()], "a");
        t.reserve(&eve()).unwrap().insert("s2", vec![], "e");
        assert_eq!(*t.get(&ada(), "s1").unwrap().value(), "a");
        assert_eq!(*t.get(&ada(), "k1").unwrap().value(), "a", "by alias");
        let stolen = t.get(&eve(), "s1").err().unwrap();
        let unknown = t.get(&eve(), "s9").err().unwrap();
        assert_eq!(stolen.code(), codes::SESSION_NOT_FOUND);
        assert_eq!(stolen.message(), "no session `s1` (your sessions: s2)");
        assert_eq!(
            unknown.message().replace("s9", "s1"),
            stolen.message(),
            "an owned id and an unknown one read the same"
        );
        assert!(t.get(&eve(), "k1").is_err(), "nor by alias");
        assert!(t.take(&eve(), "s1").is_err());
        assert!(t.take(&bob(), "s1").is_err(), "another user of the org");
        assert_eq!(t.list(&eve()).len(), 1);
        assert_eq!(t.take(&ada(), "s1").unwrap().id(), "s1");
        assert!(t.list(&ada()).is_empty());
    }

    #[test]
    fn share_org_lets_the_organisation_in_and_nobody_else() {
        let t = table(Share::Org, 8, 8);
        t.reserve(&ada()).unwrap().insert("s1", vec![], "a");
        assert_eq!(t.get(&bob(), "s1").unwrap().owner(), &ada());
        assert!(t.get(&eve(), "s1").is_err());
        assert!(t.get(&Owner::new("acme2", "ada"), "s1").is_err());
        assert_eq!(t.list(&bob()).len(), 1);
    }

    #[test]
    fn limits_count_per_owner_and_for_the_host() {
        let t = table(Share::User, 3, 2);
        let a1 = t.reserve(&ada()).unwrap();
        let _a2 = t.reserve(&ada()).unwrap();
        // Slots being filled count.
        let err = t.reserve(&ada()).err().unwrap();
        assert_eq!(err.code(), codes::LIMIT_EXCEEDED);
        assert!(err.message().contains("`max_sessions_per_owner`"), "{err}");
        a1.insert("s1", vec![], "a");
        let err = t.reserve(&ada()).err().unwrap();
        assert!(err.message().ends_with(": s1"), "lists the caller's: {err}");
        t.reserve(&eve()).unwrap().insert("e1", vec![], "e");
        // The host is full: bob is told so, without others' ids or counts.
        let err = t.reserve(&bob()).err().unwrap();
        assert_eq!(
            err.message(),
            "this host has reached its limit of 3 open sessions (`max_sessions`)"
        );
        drop(_a2);
        t.reserve(&bob()).unwrap();
    }

    #[test]
    fn share_org_counts_the_organisation_as_one_owner() {
        let t = table(Share::Org, 8, 1);
        t.reserve(&ada()).unwrap().insert("s1", vec![], "a");
        let err = t.reserve(&bob()).err().unwrap();
        assert!(
            err.message()
                .starts_with("your organisation has 1 session(s) open"),
            "{err}"
        );
        t.reserve(&eve()).unwrap();
    }

    #[test]
    fn idle_items_expire_unless_leased() {
        let t = table(Share::User, 8, 8);
        t.reserve(&ada()).unwrap().insert("s1", vec![], "a");
        t.reserve(&ada()).unwrap().insert("s2", vec![], "b");
        let held = t.get(&ada(), "s2").unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let gone: Vec<String> = t
            .expired(Duration::from_millis(10))
            .iter()
            .map(|e| e.id().to_owned())
            .collect();
        assert_eq!(gone, ["s1"]);
        drop(held);
        assert!(t.expired(Duration::from_millis(10)).is_empty(), "just used");
    }

    #[test]
    fn a_zero_limit_names_its_key() {
        let err = Table::<()>::new(
            Kind::sessions(""),
            Share::User,
            Limits {
                max: 4,
                per_owner: 0,
            },
        )
        .err()
        .unwrap();
        assert_eq!(
            err.message(),
            "`max_sessions_per_owner` is 0; it must be at least 1"
        );
    }

    #[test]
    fn ownerless_records_belong_to_the_hosts_identity() {
        let rule = Ownership::with_unowned(Share::User, Owner::new("local", "local"));
        assert!(rule.allows(None, &Owner::new("local", "local")));
        assert!(!rule.allows(None, &ada()));
        assert!(rule.allows(Some(&ada()), &ada()));
        assert!(!rule.allows(Some(&ada()), &bob()));
        let shared = Ownership::with_unowned(Share::Org, Owner::new("local", "local"));
        assert!(shared.allows(Some(&ada()), &bob()));
        assert!(!shared.allows(Some(&ada()), &eve()));
    }
}
