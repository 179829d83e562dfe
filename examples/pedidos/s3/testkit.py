"""Test helpers for the S3 sink example (confluent-kafka, from the tests' virtual environment:
run with the python that scripts/python-env.sh prints).

  testkit.py produce --topic T --count N --ids-out FILE [--first-id 1] [--tx-size 100]
                     [--rate 0] [--hours 2] [--partitions 4] [--abort 1]
      creates T (PARTITIONS partitions) if it is missing and writes N order-created records the
      way the pipeline does: key "<cliente_id>" (a JSON string), value a JSON object without
      schema envelope, header id (a uuid), in transactions of TX_SIZE records, record
      timestamps = criado_em, spread over HOURS hours before now; plus ABORT aborted
      transactions of TX_SIZE records with pedido_id values no committed record has (negative),
      which a read_committed consumer never sees. Writes the committed pedido_id values to FILE.
  testkit.py create --topic T [--partitions 4]
      creates T if it is missing.
  testkit.py delete [--topic T]... [--group G]...
      deletes those topics and consumer groups (missing ones are skipped).
"""
import argparse
import datetime
import json
import random
import sys
import time
import uuid

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic


def ensure_topic(admin, topic, partitions):
    if topic in admin.list_topics(timeout=10).topics:
        return
    fut = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic]
    try:
        fut.result()
    except KafkaException as e:
        if "TOPIC_ALREADY_EXISTS" not in str(e):
            raise


def produce(args):
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    ensure_topic(admin, args.topic, args.partitions)
    p = Producer({"bootstrap.servers": args.bootstrap, "transactional.id": f"seed-s3-testkit-{uuid.uuid4()}",
                  "enable.idempotence": True, "linger.ms": 5})
    p.init_transactions(30)
    rng = random.Random(args.first_id)
    t_end = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    t0 = t_end - datetime.timedelta(hours=args.hours)
    span = (t_end - t0).total_seconds()

    def send(pedido_id, i, n):
        cliente = 1 + rng.randrange(1000)
        at = t0 + datetime.timedelta(seconds=span * i / max(1, n))
        value = {"pedido_id": pedido_id, "cliente_id": cliente, "total": round(5 + rng.random() * 495, 2),
                 "criado_em": at.strftime("%Y-%m-%dT%H:%M:%SZ")}
        p.produce(args.topic, key=json.dumps(str(cliente)).encode(), value=json.dumps(value).encode(),
                  headers=[("id", str(uuid.uuid4()).encode())], timestamp=int(at.timestamp() * 1000))

    ids, aborted, started = [], 0, time.monotonic()
    abort_at = {args.count * (k + 1) // (args.abort + 1) for k in range(args.abort)}
    i = 0
    while i < args.count:
        if i in abort_at and aborted < args.abort:
            p.begin_transaction()
            for j in range(args.tx_size):
                send(-(args.first_id + aborted * args.tx_size + j), i, args.count)
            # The records reach the broker before the abort (an abort of a transaction whose
            # produce requests are still in flight failed now and then: INVALID_TXN_STATE).
            p.flush(30)
            p.abort_transaction(30)
            aborted += 1
            abort_at.discard(i)
        p.begin_transaction()
        for _ in range(min(args.tx_size, args.count - i)):
            pedido_id = args.first_id + i
            send(pedido_id, i, args.count)
            ids.append(pedido_id)
            i += 1
        p.commit_transaction(30)
        if args.rate > 0:
            ahead = i / args.rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)
    with open(args.ids_out, "w", encoding="utf-8") as f:
        f.writelines(f"{x}\n" for x in ids)
    print(f"testkit: {len(ids)} committed records ({args.count // args.tx_size + (args.count % args.tx_size > 0)}"
          f" transactions) and {aborted * args.tx_size} aborted ones to {args.topic} in"
          f" {time.monotonic() - started:.1f}s", file=sys.stderr)


def delete(args):
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    existing = admin.list_topics(timeout=10).topics
    topics = [t for t in args.topic if t in existing]
    if topics:
        for t, fut in admin.delete_topics(topics, operation_timeout=30).items():
            fut.result()
            print(f"testkit: deleted topic {t}", file=sys.stderr)
    if args.group:
        for g, fut in admin.delete_consumer_groups(args.group, request_timeout=30).items():
            try:
                fut.result()
                print(f"testkit: deleted consumer group {g}", file=sys.stderr)
            except KafkaException as e:
                if "GROUP_ID_NOT_FOUND" not in str(e):
                    print(f"testkit: consumer group {g}: {e}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", default="127.0.0.1:59092")
    sub = ap.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("produce")
    pp.add_argument("--topic", required=True)
    pp.add_argument("--count", type=int, required=True)
    pp.add_argument("--ids-out", required=True)
    pp.add_argument("--first-id", type=int, default=1)
    pp.add_argument("--tx-size", type=int, default=100)
    pp.add_argument("--rate", type=float, default=0, help="records per second (0: as fast as possible)")
    pp.add_argument("--hours", type=float, default=2)
    pp.add_argument("--partitions", type=int, default=4)
    pp.add_argument("--abort", type=int, default=1)
    cp = sub.add_parser("create")
    cp.add_argument("--topic", required=True)
    cp.add_argument("--partitions", type=int, default=4)
    dp = sub.add_parser("delete")
    dp.add_argument("--topic", action="append", default=[])
    dp.add_argument("--group", action="append", default=[])
    args = ap.parse_args()
    if args.cmd == "produce":
        produce(args)
    elif args.cmd == "create":
        ensure_topic(AdminClient({"bootstrap.servers": args.bootstrap}), args.topic, args.partitions)
    else:
        delete(args)


if __name__ == "__main__":
    main()
