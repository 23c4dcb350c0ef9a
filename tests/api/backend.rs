//! Which database a scenario runs on, and the macro that runs every
//! scenario on both.

#[derive(Debug, Clone)]
pub enum Backend {
    Sqlite,
    Postgres(String),
}

impl Backend {
    /// `SQLite` or `PostgreSQL`, for what a test prints.
    pub fn label(&self) -> &'static str {
        match self {
            Backend::Sqlite => "SQLite",
            Backend::Postgres(_) => "PostgreSQL",
        }
    }

    /// The PostgreSQL backend, if `HOOKLEDGER_TEST_POSTGRES_URL` is set. When
    /// it is not: under CI this fails the test; locally it says it skipped.
    pub fn postgres_or_skip(test: &str) -> Option<Backend> {
        match std::env::var("HOOKLEDGER_TEST_POSTGRES_URL") {
            Ok(url) if !url.is_empty() => Some(Backend::Postgres(url)),
            _ if std::env::var_os("CI").is_some() => {
                panic!("CI is set but HOOKLEDGER_TEST_POSTGRES_URL is not: {test} cannot run")
            }
            _ => {
                eprintln!("SKIPPED {test} on PostgreSQL: HOOKLEDGER_TEST_POSTGRES_URL is not set");
                None
            }
        }
    }
}

/// Stamps each named scenario `async fn name(backend: Backend)` into a
/// `sqlite::name` and a `postgres::name` test.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::backend::Backend::Sqlite).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let test = concat!(module_path!(), "::", stringify!($name));
                    if let Some(backend) = $crate::backend::Backend::postgres_or_skip(test) {
                        super::$name(backend).await;
                    }
                }
            )*
        }
    };
}
