// The durable timeline at the type level: the sink as core's observe.sink, listEvents, the event
// table option, and watch() values narrowed by `type` — from both entries.
import {
  applySchema,
  createMysqlEventSink,
  createMysqlListener,
  ddl,
  listEvents,
  mysqlPool,
  type EventSink,
  type FlowEvent,
  type MysqlEventSink,
} from 'iterativeflow-mysql-native';
import * as v3 from 'iterativeflow-mysql-native/v3';

export async function timelineUsage(url: string): Promise<void> {
  const sql = mysqlPool(url);
  await applySchema(sql, 'p_', { events: true });
  const statements: string[] = ddl('p_', { events: true });
  void statements;
  const sink: MysqlEventSink = createMysqlEventSink(sql, 'p_', { lingerMs: 0, onError: (e) => void e });
  const asCore: EventSink = sink; // what core's `observe: { sink, level: 'all' }` takes
  asCore.record({ runId: 'r', type: 'run.started', at: new Date() });
  await sink.flush();
  const n: number = sink.stats().written;
  void n;
  const events: FlowEvent[] = await listEvents(sql, 'r', 'p_');
  const firstAt: Date | undefined = events[0]?.at;
  void firstAt;
  const again: FlowEvent[] = await v3.listEvents(sql, 'r');
  void again;
  void v3.createMysqlEventSink(sql);
  await v3.applySchema(sql, '', { events: true });

  const listener = createMysqlListener(sql, { events: true });
  for await (const ev of listener.watch('r')) {
    if (ev.type === 'status') {
      const s: string = ev.status;
      void s;
    } else {
      const when: Date = ev.at;
      void when;
    }
  }
  const bell = createMysqlListener(sql, { doorbell: false, intervalMs: 200 }).stats();
  const mode: 'doorbell' | 'doorbell-node' | 'polling' | undefined = bell.mode;
  const rung: number = bell.rung + bell.kills;
  void mode;
  void rung;
  await listener.close();
  await sql.close();
}
