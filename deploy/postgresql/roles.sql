-- The playground's database and its two roles: the owner, which migrations, backups and
-- restores use, and the application's, which the web processes and the recorder use and which
-- may read and write rows but change no table. Executor nodes have no role at all.
--
--   sudo -u postgres psql -v db=playground -v owner=playground_owner -v app=playground_app \
--     -v owner_password="$OWNER_PASSWORD" -v app_password="$APP_PASSWORD" -f deploy/postgresql/roles.sql
--
-- Then, as the owner:   DATABASE_URL=postgres://playground_owner:...@host:5432/playground manage.py migrate
-- and the web processes and the recorder run with
--                       DATABASE_URL=postgres://playground_app:...@host:5432/playground

\set ON_ERROR_STOP on

CREATE ROLE :"owner" LOGIN PASSWORD :'owner_password';
CREATE ROLE :"app" LOGIN PASSWORD :'app_password';
CREATE DATABASE :"db" OWNER :"owner";
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
GRANT CONNECT ON DATABASE :"db" TO :"app";

\connect :"db"

-- The tables are the owner's, in the public schema, where no one else may create anything.
ALTER SCHEMA public OWNER TO :"owner";
REVOKE ALL ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO :"app";

-- Every table and sequence the owner's migrations create, now and later (and a restore
-- recreates): rows, not tables.
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"app";
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public
    GRANT USAGE, SELECT ON SEQUENCES TO :"app";
