// Fact keys and their immutable versions: the read rule and the write path.

// name: fact.read
// The read rule (DESIGN.md section 3) for a batch of reads. Each read selects keys
// of one entity and attribute (optionally unit, definition, exact period or a
// valid-time range) and gives a cutoff C (publication) and known_at K (transaction).
// A version's status is computed here from its records, never kept in a field:
//   recorded by K -> not erased -> evidence public by C -> not invalidated by K and
//   some evidence not retracted by K -> evidence meeting the requirement -> highest
//   authority -> not superseded (every publisher behind it has since said otherwise,
//   or a resolution settled it for a kept version).
// One row per matched key; `explain` counts what each filter removed, in that order.
// A read names its cutoff and known_at by their index in $times (see graphmem.facts.Times);
// a read with `now` takes the transaction's time as its cutoff (graphmem.NOW), as a null
// known_at does, and the row says which cutoff it used.
//
// Its cost follows what can still win, not the key's history (DESIGN.md, "Reading a
// key with a long history"). Every evidence edge carries its key's uid, its source's
// publisher and its version's `top` - the strongest authority rank among all the
// version's evidence, ever - and the index graphmem_evidence_feed orders a key's edges
// by (publisher, top, available_by): one "feed" per (publisher, top) pair the key has
// (listed in k.feeds as top and publisher, e.g. '3cik:0001'). A kept version holds live
// evidence of the best rank; a version survives supersession if, for one publisher
// behind its live evidence, no other kept version has later live evidence from that
// publisher - that is, if it holds that publisher's latest live evidence among kept
// versions. So the rule needs, per feed, only the latest live evidence on a version
// that could be kept: an index walk from the cutoff backwards that stops at the first
// one (skipping only evidence that is not live, or on versions whose strongest evidence
// is not live), then the evidence at exactly that time (ties), then the resolutions of
// those few versions. A key with a short history (DESIGN.md, "Reading a key with a
// short history") takes a shorter plan of the same rule: one pass over its evidence.
//
// `explain` is exact without visiting every version: the key counts its versions by
// top (k.tiers), and a version that was never invalidated, erased or evidenced by a
// retracted source (those are listed in k.flagged), whose evidence is all public by C
// and recorded by K, is live with its top as its rank: outranked below the best rank,
// kept at it. Only the other versions - flagged, with evidence after C, or all of them
// when K is before the key's last write (k.written_at) or the requirement names kinds -
// are looked at one by one, and those their own stamps remove (recorded after K,
// erased, first evidence after C) only counted. `removed` gives the filter that removed
// each version the read names in `versions` (search explain, context trace).
//
// The write path reads by uid with `idem` and `source` (the assertion's idempotency
// key and source uid; its available_by is the read's cutoff): `already` is the version
// that assertion landed on, if it was sent before. With $brief it only compares values:
// no explain, no removed, candidates with their ids and values only.
WITH
  // include: admin.known_at
  AS recorded
UNWIND $reads AS r
WITH r {.*, cutoff: CASE WHEN r.now THEN datetime.transaction() ELSE $times[r.cutoff] END} AS r,
     coalesce($times[r.known_at], recorded) AS K
// A read naming its key's uid (the write path) seeks that one key; any other read
// seeks the keys of its entity and attribute and filters them. (The second seek gets a
// null entity for a read by uid, so it finds nothing: a filter on `r` alone would be
// applied only after the seek.)
CALL (r) {
  MATCH (k:FactKey {uid: r.uid})
  RETURN k
  UNION
  MATCH (k:FactKey {tenant: $tenant, entity: CASE WHEN r.uid IS NULL THEN r.entity END,
                    attribute: r.attribute})
  WHERE (r.unit IS NULL OR k.unit = r.unit)
    AND (r.definition IS NULL OR k.definition = r.definition)
    AND (r.period IS NULL OR k.period = r.period)
    AND (r.valid_from IS NULL OR k.period_end >= r.valid_from)
    AND (r.valid_to IS NULL OR k.period_end <= r.valid_to)
  RETURN k
}
WITH r, K, k
WHERE k.tenant = $tenant AND k.scope = $scope
// A key with a short history (revision at most 16: its versions, evidence and records),
// one publisher alone behind it and no version flagged, read after its last write with
// no kinds required - most keys, most reads - takes the short rule below; every other
// read the full one (also a key whose fields are missing: the coalesce).
WITH r, r.cutoff AS C, K, k,
     coalesce(NOT $brief AND $kinds IS NULL AND r.idem IS NULL AND K >= k.written_at
              AND k.revision <= 16 AND size(k.flagged) = 0
              AND all(x IN k.feeds WHERE substring(x, 1) = substring(k.feeds[0], 1)), false) AS short
CALL (r, C, K, k, short) {
// The short rule. Nothing of such a key is recorded after K, erased, invalidated or
// evidenced by a retracted source, so a version's evidence is live when it is public by
// C, and meets the requirement when its source's rank does; the one publisher's latest
// such evidence among the versions of the best rank decides, as in the full rule
// (step 3), so each version's rank and latest evidence are read in one pass over the
// key's evidence public by C. Its explain: a version not public by C was removed by the
// cutoff (its available_by is its earliest evidence's), one with no evidence of the
// required rank by `evidence`, a weaker one `outranked`, the others of the best rank
// not kept `superseded`.
WITH r, C, K, k, short
WHERE short
CALL (k, C) {
  MATCH (k)<-[:VERSION_OF]-(f:Fact)-[e:EVIDENCED_BY]->(s:Source)
  WHERE e.available_by <= C
  WITH f, CASE WHEN s.authority_rank >= $min_rank THEN s.authority_rank ELSE 0 END AS rank, e
  WITH f, max(rank) AS rank, max(CASE WHEN rank > 0 THEN e.available_by END) AS last
  RETURN collect({f: f, rank: rank, last: last}) AS public
}
WITH r, C, K, k, public, reduce(b = 0, x IN public | CASE WHEN x.rank > b THEN x.rank ELSE b END) AS best
WITH r, C, K, k, public, best,
     reduce(m = null, x IN public |
       CASE WHEN best > 0 AND x.rank = best AND (m IS NULL OR x.last > m) THEN x.last ELSE m END) AS at
WITH r, C, K, k, public, best,
     [x IN public WHERE best > 0 AND x.rank = best AND x.last = at | x.f] AS held
WITH r, C, K, k, public, best, [f IN held WHERE
       // include: fact.unsettled $version=f $rank=best $flagged=k.flagged
     ] AS final
WITH r, C, K, k, public, best, final, COUNT { (k)<-[:VERSION_OF]-() } AS versions,
     // include: fact.values $versions=final
     AS values
RETURN
  // include: fact.status $values=values
  AS status,
  [f IN final | {f:
     // include: fact.shown_version $version=f
   , live: COLLECT {
       MATCH (f)-[e:EVIDENCED_BY]->(s:Source)
       WHERE e.available_by <= C AND s.authority_rank >= $min_rank
       RETURN
         // include: fact.shown_evidence $edge=e $source=s
     }, rank: best}] AS candidates,
  {versions: versions, known_at: 0, erased: 0, cutoff: versions - size(public), invalidated: 0,
   retracted: 0,
   evidence: size([x IN public WHERE x.rank = 0]),
   outranked: size([x IN public WHERE x.rank > 0 AND x.rank < best]),
   superseded: size([x IN public WHERE best > 0 AND x.rank = best]) - size(final)} AS explain,
  null AS already,
  COLLECT {
    UNWIND coalesce(r.versions, []) AS vid
    MATCH (f:Fact {version_id: vid})
    WHERE f.key_uid = k.uid
    WITH f, [x IN public WHERE x.f = f | x.rank][0] AS rank
    RETURN {version_id: f.version_id,
            by: CASE WHEN rank IS NULL THEN 'cutoff' WHEN rank = 0 THEN 'evidence'
                     WHEN rank < best THEN 'outranked' WHEN NOT f IN final THEN 'superseded' END}
  } AS removed
UNION ALL
// The full rule.
WITH r, C, K, k, short
WHERE NOT short
WITH r, C, K, k, [x IN k.feeds | {top: toInteger(left(x, 1)), publisher: substring(x, 1)}] AS feeds
// 1. Per feed (tiers below the requirement hold no evidence that meets it): `at`, the
// latest live evidence on a live version that holds live evidence of the feed's top
// rank. A feed without one (its versions' strongest evidence is not live at (C, K):
// rare) lists instead the rank each of its live evidence is worth (`weaker`).
WITH r, C, K, k, feeds, COLLECT {
  UNWIND feeds AS feed
  WITH feed, feed.top AS t
  WHERE t >= $min_rank
  OPTIONAL CALL (k, C, K, feed, t) {
    MATCH (f:Fact)-[e:EVIDENCED_BY]->(s:Source)
    WHERE e.key_uid = k.uid AND e.publisher = feed.publisher AND e.top = t AND e.available_by <= C
      AND
        // include: fact.live_evidence $edge=e $source=s
      AND
        // include: fact.live_version $version=f $flagged=k.flagged
      AND (s.authority_rank = t OR  // the matched edge's own source holds it
        // include: fact.holds_rank $version=f $rank=t
      )
    RETURN e.available_by AS at
    ORDER BY e.key_uid DESC, e.publisher DESC, e.top DESC, e.available_by DESC
    LIMIT 1
  }
  CALL (k, C, K, feed, t, at) {
    UNWIND CASE WHEN at IS NULL THEN [feed.publisher] ELSE [] END AS publisher
    MATCH (f:Fact)-[e:EVIDENCED_BY]->(s:Source)
    WHERE e.key_uid = k.uid AND e.publisher = publisher AND e.top = t AND e.available_by <= C
      AND
        // include: fact.live_evidence $edge=e $source=s
      AND
        // include: fact.live_version $version=f $flagged=k.flagged
    WITH e, COLLECT {
      MATCH (f)-[e2:EVIDENCED_BY]->(s2:Source)
      WHERE
        // include: fact.live_evidence $edge=e2 $source=s2
      RETURN s2.authority_rank
    } AS ranks
    RETURN collect({at: e.available_by,
                    rank: reduce(m = 0, x IN ranks | CASE WHEN x > m THEN x ELSE m END)}) AS weaker
  }
  RETURN {publisher: feed.publisher, top: t, at: at, weaker: weaker}
} AS walked
// 2. The best rank any live version holds (0: none).
WITH r, C, K, k, feeds, walked,
     reduce(b = 0, w IN walked |
       CASE WHEN w.at IS NOT NULL THEN CASE WHEN w.top > b THEN w.top ELSE b END
            ELSE reduce(m = b, x IN w.weaker | CASE WHEN x.rank > m THEN x.rank ELSE m END) END)
       AS best
// 3. Kept versions hold live evidence of the best rank, so they lie in feeds of that
// top or above. Per publisher, the latest of its live evidence on kept versions; the
// kept versions that hold evidence of that publisher at exactly that time survive
// supersession, unless a resolution settles them for another kept version.
WITH r, C, K, k, feeds, best,
     [w IN walked WHERE best > 0 AND w.top >= best | {publisher: w.publisher, top: w.top,
        at: CASE WHEN w.top = best THEN w.at
                 ELSE reduce(m = null, x IN w.weaker |
                        CASE WHEN x.rank = best AND (m IS NULL OR x.at > m) THEN x.at ELSE m END) END}]
       AS frontier
WITH r, C, K, k, feeds, best, COLLECT {
  UNWIND frontier AS x
  WITH x.publisher AS publisher, max(x.at) AS at, collect(x.top) AS tops
  WHERE at IS NOT NULL
  UNWIND tops AS t
  MATCH (f:Fact)-[e:EVIDENCED_BY]->(s:Source)
  WHERE e.key_uid = k.uid AND e.publisher = publisher AND e.top = t AND e.available_by = at
    AND
      // include: fact.live_evidence $edge=e $source=s
    AND
      // include: fact.live_version $version=f $flagged=k.flagged
    AND (s.authority_rank = best OR  // the matched edge's own source holds it
      // include: fact.holds_rank $version=f $rank=best
    )
  RETURN DISTINCT f
} AS held
WITH r, C, K, k, feeds, best, [f IN held WHERE
       // include: fact.unsettled $version=f $rank=best $flagged=k.flagged
     ] AS final
WITH r, C, K, k, feeds, best, final, [f IN final | f.version_id] AS final_ids,
     // include: fact.values $versions=final
     AS values,
     NOT $brief AND $kinds IS NULL AND K >= k.written_at AS counted
// 4. explain and removed (not with $brief). explain classifies the versions the key's
// counters cannot tell (`counted`, see above; else every version): those the first three
// filters remove by their own stamps are only counted, by filter and top; the others are
// classified one by one, as are the versions the read names (`removed`).
CALL (C, K, k, feeds, counted) {
  // with $brief nothing below runs (the aggregation still returns its one row)
  UNWIND CASE WHEN $brief THEN [] ELSE [true] END AS explained
  CALL (C, k, feeds, counted) {
    UNWIND CASE WHEN counted THEN feeds ELSE [] END AS feed
    MATCH (f:Fact)-[e:EVIDENCED_BY]->(:Source)
    WHERE e.key_uid = k.uid AND e.publisher = feed.publisher AND e.top = feed.top
      AND e.available_by > C
    RETURN f, e.top AS top
    UNION
    UNWIND CASE WHEN counted THEN k.flagged ELSE [] END AS vid
    MATCH (f:Fact {version_id: vid})
    RETURN f, COLLECT { MATCH (f)-[e:EVIDENCED_BY]->(:Source) RETURN e.top LIMIT 1 }[0] AS top
    UNION
    MATCH (f:Fact)-[:VERSION_OF]->(k)
    WHERE NOT $brief AND NOT counted
    RETURN f, null AS top
  }
  WITH f, top,
       CASE WHEN f.recorded_at > K THEN 'known_at' WHEN f.erased_at IS NOT NULL THEN 'erased'
            WHEN f.available_by > C THEN 'cutoff' END AS stamped
  RETURN collect(CASE WHEN stamped IS NULL THEN {f: f, top: top} END) AS open,
         {known_at: sum(CASE stamped WHEN 'known_at' THEN 1 ELSE 0 END),
          erased: sum(CASE stamped WHEN 'erased' THEN 1 ELSE 0 END),
          cutoff: sum(CASE stamped WHEN 'cutoff' THEN 1 ELSE 0 END),
          tops: [sum(CASE WHEN stamped IS NOT NULL AND top = 1 THEN 1 ELSE 0 END),
                 sum(CASE WHEN stamped IS NOT NULL AND top = 2 THEN 1 ELSE 0 END),
                 sum(CASE WHEN stamped IS NOT NULL AND top = 3 THEN 1 ELSE 0 END),
                 sum(CASE WHEN stamped IS NOT NULL AND top = 4 THEN 1 ELSE 0 END)]} AS early
}
WITH r, C, K, k, best, final, final_ids, values, counted, early, COLLECT {
  CALL (r, k, open) {
    UNWIND open AS x
    RETURN x.f AS f, x.top AS top, true AS tally
    UNION ALL
    UNWIND CASE WHEN $brief THEN [] ELSE coalesce(r.versions, []) END AS vid
    MATCH (f:Fact {version_id: vid})
    WHERE f.key_uid = k.uid
    RETURN f, null AS top, false AS tally
  }
  // `by`: the filter that removes the version at (C, K), in explain's order, or null if
  // it survives. The first three filters read the version's own stamps (its first
  // evidence is its earliest: none is public by C if that is not); only a version they
  // keep has its evidence read.
  WITH *, CASE WHEN f.recorded_at > K THEN 'known_at' WHEN f.erased_at IS NOT NULL THEN 'erased'
               WHEN f.available_by > C THEN 'cutoff' END AS stamped
  WITH *,
       COLLECT {
         MATCH (f)-[e:EVIDENCED_BY]->(s:Source)
         WHERE stamped IS NULL AND e.recorded_at <= K AND e.available_by <= C
         RETURN {rank: s.authority_rank, kind: s.kind,
                 retracted: coalesce(s.retracted_at <= K, false)}
       } AS public,
       EXISTS { (f)<-[:INVALIDATES]-(ix:Invalidation) WHERE stamped IS NULL AND ix.recorded_at <= K }
         AS invalidated
  WITH *, [e IN public WHERE NOT e.retracted] AS live
  WITH *, [e IN live WHERE e.rank >= $min_rank AND ($kinds IS NULL OR e.kind IN $kinds)] AS required
  WITH *, CASE
    WHEN stamped IS NOT NULL THEN stamped
    WHEN invalidated THEN 'invalidated'
    WHEN size(live) = 0 THEN 'retracted'
    WHEN size(required) = 0 THEN 'evidence'
    WHEN NOT any(e IN required WHERE e.rank = best) THEN 'outranked'
    WHEN NOT f.version_id IN final_ids THEN 'superseded'
  END AS by
  RETURN {version_id: f.version_id, top: top, tally: tally, by: by}
} AS classified
WITH r, C, K, k, best, final, final_ids, values, counted, early,
     [x IN classified WHERE x.tally] AS tallied,
     [x IN classified WHERE NOT x.tally | {version_id: x.version_id, by: x.by}] AS removed
// The versions not classified, by top: every one of them is live with its top as rank.
WITH r, C, K, k, best, final, values, early, tallied, removed,
     [t IN range(1, 4) | CASE WHEN counted THEN k.tiers[t - 1] - early.tops[t - 1]
                                                - size([x IN tallied WHERE x.top = t]) ELSE 0 END] AS plain,
     size([id IN final_ids WHERE NOT id IN [x IN tallied | x.version_id]]) AS plain_final
// With $brief (the write path, which only compares values) a row carries just the
// candidates' ids and values: decoding times and maps in the Python driver costs far
// more than computing them. For the same reason the full projection returns its times
// as microseconds since the epoch (graphmem.values.from_micros reads them back).
RETURN
  // include: fact.status $values=values
  AS status,
       // only what an answer shows of each candidate
       COLLECT {
         UNWIND final AS f
         WITH f, COLLECT {
           MATCH (f)-[e:EVIDENCED_BY]->(s:Source)
           WHERE NOT $brief AND
             // include: fact.live_evidence $edge=e $source=s
           RETURN
             // include: fact.shown_evidence $edge=e $source=s
         } AS live
         RETURN CASE WHEN $brief
           THEN {f: {version_id: f.version_id, value: f.value, value_type: f.value_type}}
           ELSE {f:
             // include: fact.shown_version $version=f
             , live: live, rank: best} END
       } AS candidates,
       CASE WHEN NOT $brief THEN {
         versions: COUNT { (k)<-[:VERSION_OF]-() },
         known_at: early.known_at + size([x IN tallied WHERE x.by = 'known_at']),
         erased: early.erased + size([x IN tallied WHERE x.by = 'erased']),
         cutoff: early.cutoff + size([x IN tallied WHERE x.by = 'cutoff']),
         invalidated: size([x IN tallied WHERE x.by = 'invalidated']),
         retracted: size([x IN tallied WHERE x.by = 'retracted']),
         evidence: size([x IN tallied WHERE x.by = 'evidence'])
                   + reduce(n = 0, t IN range(1, 4) | n + CASE WHEN t < $min_rank THEN plain[t - 1] ELSE 0 END),
         outranked: size([x IN tallied WHERE x.by = 'outranked'])
                    + reduce(n = 0, t IN range(1, 4) |
                        n + CASE WHEN t >= $min_rank AND t < best THEN plain[t - 1] ELSE 0 END),
         superseded: size([x IN tallied WHERE x.by = 'superseded'])
                     + CASE WHEN best > 0 THEN plain[best - 1] - plain_final ELSE 0 END} END AS explain,
       COLLECT {
         MATCH (src:Source {uid: r.source})
         WHERE r.idem IS NOT NULL
         UNWIND [4, 3, 2, 1] AS t
         MATCH (f:Fact)-[e:EVIDENCED_BY]->(:Source)
         WHERE e.key_uid = k.uid AND e.publisher = src.publisher AND e.top = t AND e.available_by = r.cutoff
           AND e.idem = r.idem AND e.recorded_at <= K
         RETURN f.version_id LIMIT 1
       }[0] AS already,
       // which filter removed each version the read names (null: it is among the
       // candidates), for search explain and context trace
       CASE WHEN NOT $brief THEN removed END AS removed
}
RETURN r.i AS i, CASE WHEN NOT $brief THEN K.epochSeconds * 1000000 + K.nanosecond / 1000 END AS known_at,
       CASE WHEN NOT $brief THEN C.epochSeconds * 1000000 + C.nanosecond / 1000 END AS cutoff,
       CASE WHEN NOT $brief THEN k {.uid, .entity, .attribute, .unit, .definition, .period,
                                    .revision} END AS key,
       status, candidates, explain, already, removed

// fragment: fact.unsettled
// Kept version $version is not settled by a resolution, recorded by K and public by C,
// that chose another live version holding live evidence of rank $rank.
NOT EXISTS {
  MATCH ($version)<-[:SETTLES]-(z:Resolution)-[:CHOSE]->(w:Fact)
  WHERE z.recorded_at <= K AND z.available_by <= C AND w <> $version
    AND
      // include: fact.live_version $version=w
    AND
      // include: fact.holds_rank $version=w
}

// fragment: fact.values
// The distinct values (type and value) of versions $versions: one is active, more conflict.
reduce(vals = [], f IN $versions |
  CASE WHEN f.value_type + ':' + f.value IN vals THEN vals
       ELSE vals + (f.value_type + ':' + f.value) END)

// fragment: fact.status
// A read's status from its distinct values $values.
CASE size($values) WHEN 0 THEN 'not_found' WHEN 1 THEN 'active' ELSE 'conflicted' END

// fragment: fact.shown_version
// What an answer shows of candidate version $version (times as epoch microseconds).
{version_id: $version.version_id, value: $version.value, value_type: $version.value_type,
 available_by: $version.available_by.epochSeconds * 1000000 + $version.available_by.nanosecond / 1000,
 recorded_at: $version.recorded_at.epochSeconds * 1000000 + $version.recorded_at.nanosecond / 1000,
 revision: $version.revision,
 erased_at: $version.erased_at.epochSeconds * 1000000 + $version.erased_at.nanosecond / 1000}

// fragment: fact.shown_evidence
// What an answer shows of a candidate's live evidence edge $edge from source $source.
{kind: $source.kind, rank: $source.authority_rank, publisher: $source.publisher, retracted: false,
 source_id: $source.id, authority: $source.authority, uri: $source.uri, title: $source.title,
 available_by: $edge.available_by.epochSeconds * 1000000 + $edge.available_by.nanosecond / 1000,
 recorded_at: $edge.recorded_at.epochSeconds * 1000000 + $edge.recorded_at.nanosecond / 1000}

// fragment: fact.live_evidence
// Evidence edge $edge, from source $source, counts in the read at (C, K): recorded by K,
// public by C, its source not retracted by K, and meeting the requirement. A retracted
// source carries its retraction's recorded_at (lifecycle.retract), as a version its
// erasure's.
$edge.recorded_at <= K AND $edge.available_by <= C
AND $source.authority_rank >= $min_rank AND ($kinds IS NULL OR $source.kind IN $kinds)
AND NOT coalesce($source.retracted_at <= K, false)

// fragment: fact.live_version
// Version $version is neither erased nor invalidated by K (recorded by K: it has live
// evidence, and its first evidence was recorded with it). An invalidated version is
// listed in its key's `flagged` ($flagged), so the others skip the relationship scan.
$version.erased_at IS NULL
AND (NOT $version.version_id IN $flagged
     OR NOT EXISTS { ($version)<-[:INVALIDATES]-(ix:Invalidation) WHERE ix.recorded_at <= K })

// fragment: fact.holds_rank
// Version $version holds live evidence of authority rank $rank.
EXISTS {
  MATCH ($version)-[e2:EVIDENCED_BY]->(s2:Source)
  WHERE s2.authority_rank = $rank AND
    // include: fact.live_evidence $edge=e2 $source=s2
}

// name: fact.keys_of_entity
// The keys of one entity, any attribute, whose period ends in [$valid_from, $valid_to]
// (either bound may be null): what facts_as_of reads when its attribute is left open.
MATCH (k:FactKey {tenant: $tenant, entity: $entity})
WHERE k.attribute IS NOT NULL AND k.scope = $scope
  AND ($valid_from IS NULL OR k.period_end >= $valid_from)
  AND ($valid_to IS NULL OR k.period_end <= $valid_to)
RETURN k.uid AS uid

// name: fact.keys_of_attribute
// The keys of one attribute, any entity, in the period range (facts_as_of with its
// entity left open).
MATCH (k:FactKey {tenant: $tenant, attribute: $attribute})
WHERE k.scope = $scope
  AND ($valid_from IS NULL OR k.period_end >= $valid_from)
  AND ($valid_to IS NULL OR k.period_end <= $valid_to)
RETURN k.uid AS uid

// name: fact.keys_in_period
// Every key of the scope whose period ends in the range (facts_as_of with entity and
// attribute left open), through the (tenant, period_end) index.
MATCH (k:FactKey)
WHERE k.tenant = $tenant AND k.period_end >= coalesce($valid_from, date('0001-01-01'))
  AND k.period_end <= coalesce($valid_to, date('9999-12-31')) AND k.scope = $scope
RETURN k.uid AS uid

// name: fact.create_versions
// New versions, each with its first evidence edge and its search text; creates the
// key (linked to its entity) on its first version, and bumps the key's revision. A row
// names its available_by and its key's period dates by their index in $times (see
// graphmem.facts.Times). The key's index of its evidence is kept in step (see
// fact.read): the edge carries the key, the publisher and the version's top rank; the
// key counts the version under its top, lists the new (top, publisher) feed, flags a
// version whose evidence comes from a source retracted already, and notes the write.
UNWIND $rows AS row
MERGE (k:FactKey {uid: row.key.uid})
ON CREATE SET k.tenant = $tenant, k.scope = $scope, k.entity = row.key.entity,
              k.attribute = row.key.attribute, k.unit = row.key.unit,
              k.definition = row.key.definition, k.period = row.key.period,
              k.period_start = $times[row.key.period_start], k.period_end = $times[row.key.period_end],
              k.revision = 0, k.tiers = [0, 0, 0, 0], k.feeds = [], k.flagged = []
WITH k, row
MATCH (e:Entity {uid: row.key.entity_uid})
MERGE (k)-[:ABOUT]->(e)
WITH k, e, row
MATCH (s:Source {uid: row.source_uid})
WITH k, e, row, s, toString(s.authority_rank) + s.publisher AS feed
SET k.revision = k.revision + 1, k.written_at = $recorded_at,
    k.tiers = [t IN range(1, 4) | k.tiers[t - 1] + CASE WHEN t = s.authority_rank THEN 1 ELSE 0 END],
    k.feeds = CASE WHEN feed IN k.feeds THEN k.feeds ELSE k.feeds + feed END,
    k.flagged = CASE WHEN s.retracted_at IS NOT NULL THEN k.flagged + row.version_id
                     ELSE k.flagged END
CREATE (f:Fact {version_id: row.version_id, tenant: $tenant, scope: $scope,
                key_uid: row.key.uid, value: row.value, value_type: row.value_type,
                value_num: row.value_num, value_hash: row.value_hash,
                event_time: k.period_end, period_start: k.period_start,
                available_by: $times[row.available_by], recorded_at: $recorded_at,
                revision: k.revision})
CREATE (f)-[:VERSION_OF]->(k)
CREATE (f)-[:EVIDENCED_BY {idem: row.idem, available_by: $times[row.available_by],
                           recorded_at: $recorded_at, key_uid: k.uid, publisher: s.publisher,
                           top: s.authority_rank}]->(s)
// searchable at once, by the same text search.index_facts writes (one source so far);
// here rather than in a second statement that would find each version again
WITH f, k, e, ' ' +
       // include: search.source_text
     AS sources
SET f.search_scope = $scope_token,
    f.search_text =
      // include: search.fact_text
RETURN count(f) AS created

// name: fact.add_evidence
// More evidence for an existing version: the same value asserted by another source
// (available_by by its index in $times, as in fact.create_versions). The source's
// text joins the version's search text: the words search.index_facts would write
// (it lists every source), without finding the version's key, entity and sources
// again; an erased version's text is null and stays null. The key's index of its
// evidence is kept in step (as in fact.create_versions): a source stronger than any
// before it lifts the version's top, so every edge of the version moves to the feeds of
// the new top, and the key counts the version under it.
UNWIND $rows AS row
MATCH (f:Fact {version_id: row.version_id})-[:VERSION_OF]->(k:FactKey)
MATCH (s:Source {uid: row.source_uid})
WITH f, k, s, row, COLLECT { MATCH (f)-[x:EVIDENCED_BY]->(:Source) RETURN x } AS had
WITH f, k, s, row, had, had[0].top AS was,
     CASE WHEN s.authority_rank > had[0].top THEN s.authority_rank ELSE had[0].top END AS top
FOREACH (x IN CASE WHEN top > was THEN had ELSE [] END | SET x.top = top)
WITH f, k, s, row, was, top,
     [p IN CASE WHEN top > was THEN [x IN had | x.publisher] ELSE [] END + s.publisher
      | toString(top) + p] AS feeds
SET k.revision = k.revision + 1, k.written_at = $recorded_at,
    k.tiers = [t IN range(1, 4) | k.tiers[t - 1] + CASE WHEN top = was THEN 0 WHEN t = top THEN 1
                                                        WHEN t = was THEN -1 ELSE 0 END],
    k.feeds = reduce(all = k.feeds, x IN feeds | CASE WHEN x IN all THEN all ELSE all + x END),
    k.flagged = CASE WHEN s.retracted_at IS NOT NULL AND NOT f.version_id IN k.flagged
                     THEN k.flagged + f.version_id ELSE k.flagged END
CREATE (f)-[:EVIDENCED_BY {idem: row.idem, available_by: $times[row.available_by],
                           recorded_at: $recorded_at, key_uid: k.uid, publisher: s.publisher,
                           top: top}]->(s)
SET f.search_text = f.search_text + ' ' +
      // include: search.source_text
RETURN count(f) AS added

// name: fact.landed
// The version an earlier send of this very assertion made, if one did: the evidence
// edge of its first (fact, source) pair, by that pair's idempotency key $idem
// (graphmem.facts.Assertion), among the key's versions.
MATCH (k:FactKey {uid: $key_uid})<-[:VERSION_OF]-(f:Fact)-[e:EVIDENCED_BY]->(s:Source {uid: $source_uid})
WHERE k.tenant = $tenant AND k.scope = $scope AND e.idem = $idem
RETURN f.version_id AS version_id
LIMIT 1

// name: fact.versions
// Versions by id in this scope, with all their evidence and lifecycle records: only the
// fields a version shows, and times as microseconds since the epoch (a driver DateTime
// costs about 40 times a plain integer to decode; history returns every version).
UNWIND $version_ids AS vid
MATCH (f:Fact {version_id: vid})-[:VERSION_OF]->(k:FactKey)
WHERE f.tenant = $tenant AND f.scope = $scope
RETURN k {.uid, .entity, .attribute, .unit, .definition, .period, .revision} AS key,
       f {.version_id, .value, .value_type, .revision,
          available_by: f.available_by.epochSeconds * 1000000 + f.available_by.nanosecond / 1000,
          recorded_at: f.recorded_at.epochSeconds * 1000000 + f.recorded_at.nanosecond / 1000,
          erased_at: f.erased_at.epochSeconds * 1000000 + f.erased_at.nanosecond / 1000} AS f,
       COLLECT {
         MATCH (f)-[e:EVIDENCED_BY]->(s:Source)
         RETURN {source_id: s.id, kind: s.kind, authority: s.authority, rank: s.authority_rank,
                 publisher: s.publisher, uri: s.uri, title: s.title,
                 available_by: e.available_by.epochSeconds * 1000000 + e.available_by.nanosecond / 1000,
                 recorded_at: e.recorded_at.epochSeconds * 1000000 + e.recorded_at.nanosecond / 1000,
                 retracted: EXISTS { (s)<-[:RETRACTS]-(:Retraction) }}
       } AS ev,
       COLLECT {
         MATCH (f)<-[:INVALIDATES|SETTLES|ERASES]-(x:Record)
         RETURN {kind: x.kind, reason: x.reason, by: x.by, ref: x.id,
                 recorded_at: x.recorded_at.epochSeconds * 1000000 + x.recorded_at.nanosecond / 1000}
         UNION
         MATCH (f)-[:EVIDENCED_BY]->(:Source)<-[:RETRACTS]-(x:Retraction)
         RETURN {kind: x.kind, reason: x.reason, by: x.by, ref: x.id,
                 recorded_at: x.recorded_at.epochSeconds * 1000000 + x.recorded_at.nanosecond / 1000}
       } AS lifecycle

// name: fact.history
// Every version of the matching keys, in transaction-time order (the versions of one
// transaction by availability, as fact.history_index orders them).
MATCH (k:FactKey {tenant: $tenant, entity: $entity, attribute: $attribute})
WHERE k.scope = $scope AND ($period IS NULL OR k.period = $period)
MATCH (f:Fact)-[:VERSION_OF]->(k)
RETURN f.version_id AS version_id
ORDER BY k.period_end, k.period, f.recorded_at, f.available_by, f.version_id

// name: fact.history_index
// The keys fact.history finds, each with its versions' ids in transaction-time order (the
// versions of one transaction by availability, so that pages of a key recorded in bulk
// do not interleave in time), and nothing else of them: one row per key (one list of ids
// is far cheaper to ship than a record per version), of one unit and definition when
// given. A caller pages through a long history with it and reads one page with
// fact.versions.
MATCH (k:FactKey {tenant: $tenant, entity: $entity, attribute: $attribute})
WHERE k.scope = $scope AND ($period IS NULL OR k.period = $period)
  AND ($unit IS NULL OR k.unit = $unit) AND ($definition IS NULL OR k.definition = $definition)
MATCH (f:Fact)-[:VERSION_OF]->(k)
WITH k, f ORDER BY f.recorded_at, f.available_by, f.version_id
WITH k, collect(f.version_id) AS version_ids
RETURN k.period AS period, k.unit AS unit, k.definition AS definition, version_ids
ORDER BY k.period_end, k.period, k.unit, k.definition
