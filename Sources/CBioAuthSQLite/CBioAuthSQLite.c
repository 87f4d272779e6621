#include "CBioAuthSQLite.h"
#include "sqlite_nio_sqlite3.h"

int bioauth_sqlite_enable_qpsg(struct sqlite3 *db) {
    int enabled = 0;
    int code = sqlite_nio_sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_QPSG, 1, &enabled);
    return code == SQLITE_OK && !enabled ? SQLITE_ERROR : code;
}
