-- Syncscope demo schema: a small issue tracker that exercises the value types a shape server must format.
CREATE TYPE issue_status AS ENUM ('backlog', 'todo', 'in_progress', 'done', 'cancelled');

CREATE TABLE users (
  id          uuid PRIMARY KEY,
  email       varchar(255) NOT NULL UNIQUE,
  name        text NOT NULL,
  is_admin    boolean NOT NULL DEFAULT false,
  karma       integer NOT NULL DEFAULT 0,
  born_on     date,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE projects (
  id          bigint PRIMARY KEY,
  name        text NOT NULL,
  owner_id    uuid NOT NULL REFERENCES users (id),
  budget      numeric(12, 2),
  archived    boolean NOT NULL DEFAULT false,
  tags        text[] NOT NULL DEFAULT '{}',
  settings    jsonb NOT NULL DEFAULT '{}',
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE issues (
  id          integer PRIMARY KEY,
  project_id  bigint NOT NULL REFERENCES projects (id),
  owner_id    uuid REFERENCES users (id),
  title       varchar(200) NOT NULL,
  body        text,
  status      issue_status NOT NULL DEFAULT 'backlog',
  priority    integer NOT NULL DEFAULT 3,
  estimate    numeric(6, 1),
  labels      text[] NOT NULL DEFAULT '{}',
  metadata    jsonb,
  due_on      date,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz
);
CREATE INDEX issues_project_id ON issues (project_id);

CREATE TABLE comments (
  id          uuid PRIMARY KEY,
  issue_id    integer NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
  author_id   uuid NOT NULL REFERENCES users (id),
  body        text NOT NULL,
  edited      boolean NOT NULL DEFAULT false,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX comments_issue_id ON comments (issue_id);

-- Composite primary key.
CREATE TABLE issue_watchers (
  issue_id    integer NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
  user_id     uuid NOT NULL REFERENCES users (id),
  since       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (issue_id, user_id)
);

-- A quoted, mixed-case table name with mixed-case columns.
CREATE TABLE "UserSettings" (
  "userId"      uuid PRIMARY KEY REFERENCES users (id),
  "darkMode"    boolean NOT NULL DEFAULT false,
  "pageSize"    integer NOT NULL DEFAULT 50,
  "Locale"      varchar(10),
  preferences   jsonb
);
