#ifndef CBIOAUTHSQLITE_H
#define CBIOAUTHSQLITE_H

struct sqlite3;

/// Turns on SQLITE_DBCONFIG_ENABLE_QPSG (the query planner stability guarantee) for `db`, so a
/// prepared statement is never re-prepared because a newly bound value might allow a better
/// plan. sqlite3_db_config is variadic, which Swift cannot call. Returns a SQLite result code.
int bioauth_sqlite_enable_qpsg(struct sqlite3 *db);

#endif
