"""Counts the orders in the bucket, through the S3 API (SigV4-signed GETs, Python's standard
library only). Called by check.sh; see there for the arguments."""
import argparse
import collections
import datetime
import gzip
import hashlib
import hmac
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def s3_get(args, path, query=None):
    """GET path (an already percent-encoded bucket/key path) with AWS signature v4."""
    query = query or {}
    url = urllib.parse.urlsplit(args.endpoint)
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    qs = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                  for k, v in sorted(query.items()))
    headers = {"host": url.netloc, "x-amz-content-sha256": EMPTY_SHA256, "x-amz-date": amz_date}
    signed = ";".join(sorted(headers))
    canonical = "\n".join(["GET", path, qs, "".join(f"{k}:{headers[k]}\n" for k in sorted(headers)),
                           signed, EMPTY_SHA256])
    scope = f"{day}/{args.region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(("AWS4" + args.secret_key).encode(), day)
    for part in (args.region, "s3", "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={args.access_key}/{scope}, "
                                f"SignedHeaders={signed}, Signature={signature}")
    del headers["host"]
    req = urllib.request.Request(f"{args.endpoint}{path}" + (f"?{qs}" if qs else ""), headers=headers)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.read()


def list_objects(args):
    """(key, etag) of every object in the bucket (ListObjectsV2, all pages)."""
    ns = {"s3": "http://s3.amazonaws.com/doc/2006-03-01/"}
    out, token = [], None
    while True:
        query = {"list-type": "2"}
        if token:
            query["continuation-token"] = token
        root = ET.fromstring(s3_get(args, "/" + urllib.parse.quote(args.bucket), query))
        for c in root.findall("s3:Contents", ns):
            out.append((c.findtext("s3:Key", namespaces=ns), c.findtext("s3:ETag", namespaces=ns)))
        if root.findtext("s3:IsTruncated", namespaces=ns) != "true":
            return out
        token = root.findtext("s3:NextContinuationToken", namespaces=ns)


def records_of(body):
    """The JSON values of one jsonl object (gzip-compressed or not; with or without envelope)."""
    if body[:2] == b"\x1f\x8b":
        body = gzip.decompress(body)
    for line in body.decode().splitlines():
        if line.strip():
            rec = json.loads(line)
            if isinstance(rec, dict) and "pedido_id" not in rec and isinstance(rec.get("value"), dict):
                rec = rec["value"]
            yield rec


class Retry(Exception):
    """The bucket changed while it was read."""


def scan(args, cache):
    """pedido_id -> count, the keys read, their folders."""
    counts, keys = collections.Counter(), []
    for key, etag in list_objects(args):
        name = key.rsplit("/", 1)[-1]
        if args.topic and not name.startswith(args.topic + "-"):
            continue
        if (key, etag) not in cache:
            path = "/" + urllib.parse.quote(args.bucket) + "/" + urllib.parse.quote(key, safe="/-_.~")
            try:
                body = s3_get(args, path)
            except urllib.error.HTTPError as e:
                if e.code == 404:  # replaced or removed since the listing: look again
                    raise Retry() from e
                raise
            cache[(key, etag)] = [r.get("pedido_id") for r in records_of(body)]
        keys.append(key)
        counts.update(cache[(key, etag)])
    return counts, keys


def read(args, cache):
    """scan(), or (None, None) when the bucket changed while it was read."""
    try:
        return scan(args, cache)
    except Retry:
        return None, None
    except (urllib.error.URLError, OSError) as e:
        sys.exit(f"s3: cannot read bucket {args.bucket} at {args.endpoint}: {e}")


def folders(keys):
    dirs = sorted({k.rsplit("/", 1)[0] if "/" in k else "." for k in keys})
    if len(dirs) <= 3:
        return ", ".join(dirs)
    return f"{dirs[0]} .. {dirs[-1]} ({len(dirs)} folders)"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("count", type=int)
    p.add_argument("ids", nargs="?")
    p.add_argument("--topic", default="")
    p.add_argument("--timeout", type=float, default=180)
    p.add_argument("--settle", type=float, default=0)
    p.add_argument("--endpoint", required=True)
    p.add_argument("--bucket", required=True)
    p.add_argument("--region", required=True)
    p.add_argument("--access-key", required=True)
    p.add_argument("--secret-key", required=True)
    args = p.parse_args()
    expected = None
    if args.ids:
        with open(args.ids, encoding="utf-8") as f:
            expected = {int(line) for line in f if line.strip()}
        if len(expected) != args.count:
            sys.exit(f"s3: {args.ids} has {len(expected)} distinct ids, not {args.count}")
    t0, cache = time.monotonic(), {}
    deadline = t0 + args.timeout
    while True:
        counts, keys = read(args, cache)
        if counts is not None:
            have = set(counts) & expected if expected is not None else set(counts)
            if len(have) >= args.count:
                break
        if time.monotonic() >= deadline:
            if counts is None:
                sys.exit(f"s3: the bucket kept changing while it was read for {args.timeout:.0f}s")
            break
        time.sleep(0.5)
    # Objects still being rewritten (a restarted task) would change the counts: one more look later.
    if args.settle > 0 and len(have) >= args.count:
        time.sleep(args.settle)
        for _ in range(120):
            fresh = read(args, cache)
            if fresh[0] is not None:
                counts, keys = fresh
                break
            time.sleep(0.5)
    waited = time.monotonic() - t0
    total = sum(counts.values())
    dups = {i: n for i, n in counts.items() if n > 1}
    extra_copies = sum(n - 1 for n in dups.values())
    if expected is not None:
        missing = len(expected - set(counts))
        unexpected = sorted(set(counts) - expected, key=str)
    else:
        missing = max(0, args.count - len(counts))
        unexpected = []
    where = f"in {len(keys)} objects under {folders(keys) if keys else '(none)'}"
    line = (f"s3: {total} orders {where}, "
            f"{'each once' if not dups and not unexpected and missing == 0 else 'NOT each once'} "
            f"({missing} missing, {len(dups)} duplicated"
            + (f" with {extra_copies} extra copies" if dups else "")
            + (f", {len(unexpected)} unexpected" if unexpected else "")
            + f"; waited {waited:.1f}s)")
    print(line)
    if missing or dups or unexpected or total != args.count:
        if dups:
            sample = ", ".join(f"{i} x{n}" for i, n in sorted(dups.items(), key=lambda kv: str(kv[0]))[:10])
            print(f"s3: duplicated pedido_id (first 10): {sample}", file=sys.stderr)
        if unexpected:
            print(f"s3: unexpected pedido_id (first 10): {unexpected[:10]}", file=sys.stderr)
        if missing:
            if expected is not None:
                gone = sorted(expected - set(counts))[:10]
                print(f"s3: missing pedido_id (first 10): {gone}", file=sys.stderr)
            print(f"s3: {missing} of {args.count} orders missing after {args.timeout:.0f}s", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
