'use strict';
// The MySQL Group Replication cluster kind (checks/cluster.js; docs/high-availability.md): the
// member's state and role, its group's mode and primary, whether the pool's hosts name that
// primary, and the queues flow control throttles writers on. Its facts come from the member's
// performance_schema (read by `collect`; an account without SELECT there gets one warning).
const { isOn } = require('../facts');
const { check } = require('../verdict');

/** Transactions waiting in a queue beyond which flow control is near (its default threshold: 25,000). */
const QUEUE_WARN = 10_000;

async function collect(sql, f) {
  if (f.maria) return;
  const vars = await sql.query(
    "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('group_replication_group_name', 'group_replication_single_primary_mode')",
  );
  const v = Object.fromEntries(vars.map((r) => Object.values(r).map(String)));
  if (!v.group_replication_group_name) return;
  const group = { name: v.group_replication_group_name, singlePrimary: isOn(v.group_replication_single_primary_mode) };
  f.group = group;
  try {
    const members = await sql.query(
      'SELECT MEMBER_ID AS id, MEMBER_HOST AS host, MEMBER_PORT AS port, MEMBER_STATE AS state, MEMBER_ROLE AS role, ' +
        '(MEMBER_ID = @@GLOBAL.server_uuid) AS me FROM performance_schema.replication_group_members',
    );
    group.members = members.map((r) => ({
      host: String(r.host),
      port: Number(r.port),
      state: String(r.state),
      role: String(r.role || ''),
      me: Number(r.me) === 1,
    }));
    const [q] = await sql.query(
      'SELECT COUNT_TRANSACTIONS_IN_QUEUE AS cert, COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE AS apply ' +
        'FROM performance_schema.replication_group_member_stats WHERE MEMBER_ID = @@GLOBAL.server_uuid',
    );
    if (q) group.queues = { certification: Number(q.cert), applier: Number(q.apply) };
  } catch (e) {
    group.error = e.message;
  }
}

const applies = (f) => Boolean(f.group);

function absent(f) {
  return f.maria ? 'Group Replication is a MySQL cluster' : 'Group Replication: not configured';
}

const at = (m) => `${m.host}:${m.port}`;

function groupChecks(f, t) {
  const g = f.group;
  const mode = g.singlePrimary ? 'single-primary' : 'multi-primary';
  if (!g.members)
    return [
      check(
        'group',
        'warn',
        `a Group Replication member (${mode}), but its state could not be read: ${g.error} — ` +
          'GRANT SELECT ON performance_schema.replication_group_members (the pool probe reads it too)',
        { mode },
      ),
    ];
  const me = g.members.find((m) => m.me);
  const online = g.members.filter((m) => m.state === 'ONLINE');
  const primary = g.singlePrimary ? online.find((m) => m.role === 'PRIMARY') : undefined;
  const value = {
    mode,
    state: me?.state ?? 'OFFLINE',
    role: me?.role ?? '',
    members: g.members.length,
    online: online.length,
    primary: primary ? at(primary) : null,
  };
  const out = [];
  if (!me || me.state !== 'ONLINE')
    out.push(
      check('group', 'fail', `this member is ${value.state}, not ONLINE in its group: it refuses writes`, value),
    );
  else if (2 * online.length <= g.members.length)
    out.push(
      check(
        'group',
        'fail',
        `${online.length} of ${g.members.length} members ONLINE: no majority, commits wait`,
        value,
      ),
    );
  else {
    const role = g.singlePrimary ? `${me.role} of a single-primary group` : 'a member of a multi-primary group';
    out.push(check('group', 'ok', `ONLINE, ${role} of ${g.members.length} (${online.length} ONLINE)`, value));
  }
  // A single-primary group takes writes on its primary only: the pool must be able to reach it.
  if (g.singlePrimary) {
    const hosts = Array.isArray(t.hosts) ? t.hosts.map((h) => `${h.host}:${h.port}`) : [];
    const listed = primary && hosts.includes(at(primary));
    const names = g.members.map(at).join(',');
    if (!primary) out.push(check('group.primary', 'fail', 'the group has no ONLINE primary now', { listed: false }));
    else if (listed)
      out.push(
        check('group.primary', 'ok', `the primary ${at(primary)} is one of the pool's hosts (${hosts.join(', ')})`, {
          listed: true,
        }),
      );
    else
      out.push(
        check(
          'group.primary',
          hosts.length > 1 ? 'fail' : 'warn',
          `the pool's host${hosts.length === 1 ? '' : 's'} (${hosts.join(', ') || '?'}) do not include the primary ` +
            `${at(primary)}: writes fail when they reach a secondary — list every member: mysql://user@${names}/db`,
          { listed: false },
        ),
      );
  }
  if (g.queues) {
    const { certification, applier } = g.queues;
    const busy = Math.max(certification, applier) >= QUEUE_WARN;
    out.push(
      check(
        'group.queues',
        busy ? 'warn' : 'ok',
        `${certification} transactions waiting for certification, ${applier} for the applier` +
          (busy
            ? ' — flow control will throttle writers near 25,000 (group_replication_flow_control_*_threshold)'
            : ''),
        g.queues,
      ),
    );
  }
  return out;
}

const group = { name: 'group-replication', collect, applies, absent, checks: groupChecks };

module.exports = { group };
