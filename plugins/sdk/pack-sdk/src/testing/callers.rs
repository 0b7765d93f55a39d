//! Callers for ownership tests: two users of one organisation (`ada` and
//! `bob` of `acme`) and one of another (`eve` of `evil`).

use crate::owned::Owner;

/// `ada` of `acme`.
pub fn ada() -> Owner {
    Owner::new("acme", "ada")
}

/// `bob` of `acme`, ada's colleague.
pub fn bob() -> Owner {
    Owner::new("acme", "bob")
}

/// `eve` of `evil`, another organisation.
pub fn eve() -> Owner {
    Owner::new("evil", "eve")
}
