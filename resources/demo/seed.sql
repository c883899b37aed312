-- Deterministic demo data: 200 users, 40 projects, 3,000 issues, 6,000 comments, 4,000 watchers.
SELECT setseed(0.42);

INSERT INTO users (id, email, name, is_admin, karma, born_on, created_at)
SELECT md5('user' || i)::uuid,
       'user' || i || '@example.com',
       (ARRAY['Ada','Grace','Linus','Barbara','Ken','Margaret','Dennis','Frances','Edsger','Radia'])[1 + i % 10] || ' ' || i,
       i % 25 = 0,
       (i * 37) % 1000,
       CASE WHEN i % 7 = 0 THEN NULL ELSE date '1970-01-01' + (i * 97) % 15000 END,
       timestamptz '2024-01-01 00:00:00+00' + i * interval '1 hour'
FROM generate_series(1, 200) AS i;

INSERT INTO projects (id, name, owner_id, budget, archived, tags, settings, created_at)
SELECT 1000000000 + i,
       'Project ' || i,
       md5('user' || (1 + i % 200))::uuid,
       CASE WHEN i % 5 = 0 THEN NULL ELSE round((i * 1234.567)::numeric, 2) END,
       i % 9 = 0,
       ARRAY['team-' || (i % 4), CASE WHEN i % 2 = 0 THEN 'public' ELSE 'private' END],
       jsonb_build_object('color', (ARRAY['red','green','blue'])[1 + i % 3], 'limits', jsonb_build_object('wip', i % 6)),
       timestamptz '2024-02-01 09:30:00+00' + i * interval '1 day'
FROM generate_series(1, 40) AS i;

INSERT INTO issues (id, project_id, owner_id, title, body, status, priority, estimate, labels, metadata, due_on, created_at, updated_at)
SELECT i,
       1000000000 + 1 + i % 40,
       CASE WHEN i % 11 = 0 THEN NULL ELSE md5('user' || (1 + (i * 7) % 200))::uuid END,
       'Issue ' || i || ': ' || (ARRAY['fix login','slow query','add export','crash on save','typo in docs','dark mode'])[1 + i % 6],
       CASE WHEN i % 4 = 0 THEN NULL ELSE 'Steps to reproduce issue ' || i || E'.\nLine two with "quotes" and a backslash \\.' END,
       (ARRAY['backlog','todo','in_progress','done','cancelled'])[1 + i % 5]::issue_status,
       1 + i % 5,
       CASE WHEN i % 3 = 0 THEN NULL ELSE (i % 40) / 2.0 END,
       CASE WHEN i % 2 = 0 THEN ARRAY['bug'] ELSE ARRAY['feature', 'ui'] END,
       CASE WHEN i % 6 = 0 THEN NULL ELSE jsonb_build_object('source', 'seed', 'n', i, 'flags', jsonb_build_array(i % 2 = 0, null)) END,
       CASE WHEN i % 8 = 0 THEN NULL ELSE date '2025-01-01' + i % 365 END,
       timestamptz '2024-03-01 12:00:00+00' + i * interval '17 minutes',
       CASE WHEN i % 2 = 0 THEN timestamptz '2024-06-01 08:15:30.123456+00' + i * interval '3 minutes' END
FROM generate_series(1, 3000) AS i;

INSERT INTO comments (id, issue_id, author_id, body, edited, created_at)
SELECT md5('comment' || i)::uuid,
       1 + i % 3000,
       md5('user' || (1 + (i * 13) % 200))::uuid,
       'Comment ' || i || ' — ünïcødé ✓',
       i % 10 = 0,
       timestamptz '2024-04-01 00:00:00+00' + i * interval '5 minutes'
FROM generate_series(1, 6000) AS i;

INSERT INTO issue_watchers (issue_id, user_id, since)
SELECT DISTINCT ON (1 + i % 3000, md5('user' || (1 + (i * 3) % 200))::uuid)
       1 + i % 3000,
       md5('user' || (1 + (i * 3) % 200))::uuid,
       timestamptz '2024-05-01 00:00:00+00' + i * interval '1 minute'
FROM generate_series(1, 4000) AS i;

INSERT INTO "UserSettings" ("userId", "darkMode", "pageSize", "Locale", preferences)
SELECT md5('user' || i)::uuid, i % 2 = 0, 25 * (1 + i % 4), (ARRAY['en-GB','de-DE','fr-FR',NULL])[1 + i % 4],
       CASE WHEN i % 3 = 0 THEN NULL ELSE jsonb_build_object('notifications', i % 2 = 1) END
FROM generate_series(1, 200) AS i;
