'use strict';
// The host-list check: each host of a multi-host pool and its state (`sql.stats().hosts`). A
// host the doctor's calls never needed (a sequential pool uses the first healthy one) shows as
// healthy until a call finds otherwise. Single-host pools get no line.
const { check } = require('../verdict');

function hostLabel(h) {
  const where = h.host.includes(':') ? `[${h.host}]:${h.port}` : `${h.host}:${h.port}`;
  if (h.state === 'healthy') return `${where} healthy`;
  return `${where} set aside since ${new Date(h.since).toISOString()} (${h.reason || 'no reason given'})`;
}

/** `t.hosts`: the pool's `stats().hosts` after the doctor's calls, or undefined. */
function hostChecks(t) {
  const hosts = t.hosts;
  if (!Array.isArray(hosts) || hosts.length < 2) return [];
  const aside = hosts.filter((h) => h.state !== 'healthy').length;
  const detail = `${hosts.length} hosts: ${hosts.map(hostLabel).join('; ')}`;
  const value = hosts.map(({ host, port, state, reason }) => ({ host, port, state, reason }));
  if (aside === 0) return [check('pool.hosts', 'ok', detail, value)];
  if (aside === hosts.length) return [check('pool.hosts', 'fail', `every host is set aside — ${detail}`, value)];
  return [check('pool.hosts', 'warn', `${aside} of ${hosts.length} hosts set aside — ${detail}`, value)];
}

module.exports = { hostChecks };
