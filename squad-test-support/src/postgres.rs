//! Databases of their own on a real PostgreSQL server, for the tests and benches that need one.
//!
//! The server comes from `SQUAD_TEST_POSTGRES_URL` (for example
//! `postgres://postgres@127.0.0.1:5432/test`; `.ci/run` sets it). Without it [`server`] says so on
//! stderr and returns `None`, and the test has nothing to run against.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The server's URL from `SQUAD_TEST_POSTGRES_URL`, or `None` (said once on stderr).
#[expect(
    clippy::print_stderr,
    reason = "a skipped test says so in the test output"
)]
pub fn server() -> Option<String> {
    match std::env::var("SQUAD_TEST_POSTGRES_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            eprintln!("SQUAD_TEST_POSTGRES_URL is not set: PostgreSQL tests skipped");
            None
        }
    }
}

/// `url` with its database replaced by `db` and, with `schema`, a search path of that schema.
/// The URL's other query parameters are kept.
pub fn with_db(url: &str, db: &str, schema: Option<&str>) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    let mut out = format!("{}/{db}", &base[..host_end]);
    let mut params: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect();
    if let Some(s) = schema {
        params.push(format!("options=-csearch_path%3D{s}"));
    }
    if !params.is_empty() {
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A database of its own on the server, created empty and dropped (`WITH (FORCE)`) on drop.
#[derive(Debug)]
pub struct TestDb {
    admin: String,
    name: String,
    /// The database's URL: the server's, with this database.
    pub url: String,
}

impl TestDb {
    /// Creates `<prefix>_<pid>_<n>` on `server` (dropping a left-over one of that name first).
    pub fn new(server: &str, prefix: &str) -> Self {
        let name = format!(
            "{prefix}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut c = postgres::Client::connect(server, postgres::NoTls).unwrap();
        c.batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
            .unwrap();
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        let url = with_db(server, &name, None);
        Self {
            admin: server.to_owned(),
            name,
            url,
        }
    }

    /// Creates `schema` in this database: the URL that uses it as the search path.
    pub fn schema(&self, schema: &str) -> String {
        self.client()
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .unwrap();
        with_db(&self.admin, &self.name, Some(schema))
    }

    /// A new connection to this database.
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls).unwrap()
    }

    /// The first column of the first row of `sql`, a count.
    pub fn count(&self, sql: &str) -> i64 {
        self.client().query_one(sql, &[]).unwrap().get(0)
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}
