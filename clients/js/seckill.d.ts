/**
 * Solves a proof-of-work challenge: the decimal counter such that SHA-256 of
 * `<challenge>:<counter>` has at least `difficulty` leading zero bits. It runs in a Web Worker
 * (browsers) or a worker_threads thread (Node), else in this thread in slices that yield.
 * @param {string} challenge
 * @param {number} difficulty bits
 * @param {{ onProgress?: (p: Progress) => void, signal?: AbortSignal, inline?: boolean }} [opts]
 *   inline: run in this thread even where a worker is available.
 * @returns {Promise<string>}
 */
export function solve(challenge: string, difficulty: number, opts?: {
    onProgress?: (p: Progress) => void;
    signal?: AbortSignal;
    inline?: boolean;
}): Promise<string>;
/**
 * seckill: a client for the flash-sale edge's buyer protocol (docs/client.md; the wire format
 * is docs/openapi.yaml). One ES module, no dependencies, no build step: it runs in browsers
 * (the proof of work in a Web Worker) and in Node 20.19+ or 22.12+ (in a worker_threads thread; `require()` of this module works from those versions).
 *
 *   import { Client } from "@seckill/client";
 *   const c = new Client({ baseURL: "https://shop.example" });
 *   const place = await c.enter("drop-1", { onProgress: (p) => bar(p.tried / p.expected) });
 *   const admitted = await c.waitForAdmission("drop-1", place, { onUpdate: show });
 *   const { token } = await c.token("drop-1");
 *   const { order_id } = await c.buy("drop-1", { token });
 *   const order = await c.waitOrder(order_id);
 *
 * @module seckill
 */
/**
 * @typedef {object} ClientOptions
 * @property {string} [baseURL] The gateway's origin ("" or absent: the page's own origin). A page
 *   on another origin than the gateway needs it, the gateway's `seckill_cors` allow list, and
 *   credentials "include" for the shop's session cookie (docs/DESIGN.md, "URL space").
 * @property {string} [prefix] The path prefix of the gateway's buyer routes (the seckill app's
 *   `prefix`; default "/seckill"): token, buy, room, challenge, queue and draw are under it.
 * @property {string} [ordersPrefix] The path prefix of the order status route (the app's
 *   `orders_prefix`; default "/orders").
 * @property {Record<string, string>} [headers] Headers sent with every request (e.g. X-User-ID
 *   where the gateway believes it; production gateways read the shop's session cookie instead).
 * @property {RequestCredentials} [credentials] fetch's credentials (default "same-origin", so
 *   the shop's session cookie goes along).
 * @property {typeof fetch} [fetch] The fetch to use (default globalThis.fetch).
 * @property {(ms: number, signal?: AbortSignal) => Promise<void>} [sleep] How to wait between
 *   polls (default a timer; tests pass their own).
 * @property {number} [maxBackoffMs] The longest wait after repeated 429 / 503 (default 30000).
 * @property {DeviceKey} [deviceKey] The device's key (DeviceKey.open()): the token issue, the
 *   room's entry, polls and leave, and the purchase then carry a DPoP proof of it, so the token
 *   and the ticket are bound to this device (device_binding, docs/DESIGN.md "Device-bound tokens
 *   and tickets"). Absent: bearer tokens, until a gateway answers proof_required: the client
 *   then opens the device's key (DeviceKey.open()) and asks again once, so a page works with
 *   any device_binding unchanged.
 */
/**
 * @typedef {object} Refusal
 * @property {string} code A stable code (docs/openapi.yaml lists them by status).
 * @property {string} message
 * @property {string} [order_id] The existing order (already_bought).
 * @property {string} [variant] The variant a sold_out is about.
 * @property {number} [held] The units held already (limit_reached).
 */
/**
 * @typedef {object} QueueAnswer
 * @property {string} [ticket] Send it back with each poll (an answer may hand out a new one).
 * @property {string} [entry_id]
 * @property {"waiting"|"admitted"|"sold_out"|"ended"|"paused"|"left"} state
 * @property {number} [position]
 * @property {number} [ahead]
 * @property {number} [estimated_wait_s]
 * @property {number[]} [estimated_wait_range_s]
 * @property {number} refresh_s Poll again after this many seconds.
 * @property {string} [admitted_until]
 * @property {number} [units_left]
 */
/**
 * @typedef {object} Progress
 * @property {number} tried Hashes tried so far.
 * @property {number} expected Hashes expected on average (2^difficulty).
 * @property {number} difficulty
 * @property {boolean} done The work is finished: the last event of a solve (tried is then
 *   the counter found plus one).
 */
/**
 * @typedef {object} Order
 * @property {string} order_id
 * @property {string} sale_id
 * @property {"queued"|"created"|"failed"|"paid"|"cancelled"} status
 * @property {string} [reason]
 * @property {string} [variant]
 * @property {number} [quantity]
 */
/** A refusal of the edge: its HTTP status, its stable code, and Retry-After when given. */
export class SeckillError extends Error {
    /**
     * @param {number} status
     * @param {Refusal} body
     * @param {number | undefined} retryAfter seconds
     */
    constructor(status: number, body: Refusal, retryAfter: number | undefined);
    /** @type {number} */
    status: number;
    /** @type {string} */
    code: string;
    /** @type {Refusal} */
    body: Refusal;
    /** @type {number | undefined} */
    retryAfter: number | undefined;
}
/**
 * The device's P-256 key for proofs of possession (RFC 9449 style). Its private half is a
 * WebCrypto key created with extractable false: the page signs with it but cannot read it,
 * nor can any script of the page, so a token or ticket bound to it is worth nothing copied
 * elsewhere. In a browser it is kept in IndexedDB (the CryptoKey itself, structured-cloned,
 * still not extractable) and found again on the next visit; in Node, in memory.
 */
export class DeviceKey {
    /**
     * The device's key named name: the one kept in IndexedDB, or a new one (kept there).
     * @param {string} [name]
     * @returns {Promise<DeviceKey>}
     */
    static open(name?: string): Promise<DeviceKey>;
    /** @param {CryptoKeyPair} pair @param {JsonWebKey} jwk */
    constructor(pair: CryptoKeyPair, jwk: JsonWebKey);
    /** The gateway's clock minus ours (ms), learnt from answers' Date header. */
    skewMs: number;
    /** The key's RFC 7638 thumbprint (what tokens are sealed with). @returns {Promise<string>} */
    thumbprint(): Promise<string>;
    /**
     * A fresh DPoP proof for one request: a compact JWS (typ dpop+jwt, ES256, the public jwk)
     * over htm, htu (the URL without query or fragment), iat (the gateway's clock, as far as
     * its Date header told), a random jti, and ath, the token's or ticket's hash ("" for none).
     * @param {string} method @param {string} url an absolute URL @param {string} [token]
     * @returns {Promise<string>}
     */
    proof(method: string, url: string, token?: string): Promise<string>;
    #private;
}
/**
 * A buyer's client of one gateway. It is an EventTarget: "progress" (detail: Progress) while
 * a proof of work runs, "update" (detail: QueueAnswer) at each poll of the waiting room.
 */
export class Client extends EventTarget {
    /** @param {ClientOptions} [opts] */
    constructor(opts?: ClientOptions);
    baseURL: string;
    prefix: string;
    ordersPrefix: string;
    headers: {
        [x: string]: string;
    };
    credentials: RequestCredentials;
    fetch: typeof fetch;
    sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
    maxBackoffMs: number;
    deviceKey: DeviceKey | undefined;
    /**
     * One request: the decoded JSON answer, or a SeckillError for a refusal.
     * @param {string} method @param {string} path
     * @param {{ headers?: Record<string, string>, body?: any, signal?: AbortSignal }} [o]
     * @returns {Promise<any>}
     */
    request(method: string, path: string, o?: {
        headers?: Record<string, string>;
        body?: any;
        signal?: AbortSignal;
    }): Promise<any>;
    /**
     * A one-time purchase token (POST {prefix}/{sale}/token). challengeToken is the token of
     * the site's bot challenge, when it has one (sent as X-Seckill-Challenge-Token; single use).
     * @param {string} sale @param {{ signal?: AbortSignal, challengeToken?: string }} [o]
     * @returns {Promise<{ token: string, expires_at: string }>}
     */
    token(sale: string, o?: {
        signal?: AbortSignal;
        challengeToken?: string;
    }): Promise<{
        token: string;
        expires_at: string;
    }>;
    /**
     * Buys (POST {prefix}/{sale}/buy): 202 with the order id, or a SeckillError (sold_out,
     * already_bought with its order_id, limit_reached with held, ...).
     * @param {string} sale
     * @param {{ token?: string, variant?: string, quantity?: number, signal?: AbortSignal }} [o]
     * @returns {Promise<{ order_id: string, status: "queued", variant?: string, quantity?: number }>}
     */
    buy(sale: string, o?: {
        token?: string;
        variant?: string;
        quantity?: number;
        signal?: AbortSignal;
    }): Promise<{
        order_id: string;
        status: "queued";
        variant?: string;
        quantity?: number;
    }>;
    /**
     * The buyer's order (GET {ordersPrefix}/{id}).
     * @param {string} orderId @param {{ signal?: AbortSignal }} [o]
     * @returns {Promise<Order>}
     */
    order(orderId: string, o?: {
        signal?: AbortSignal;
    }): Promise<Order>;
    /**
     * Polls the order until it leaves "queued" (written by the backend, or failed), backing off
     * on 429 / 503 as the gateway asks.
     * @param {string} orderId
     * @param {{ intervalMs?: number, signal?: AbortSignal }} [o] intervalMs: between polls (default 1000)
     * @returns {Promise<Order>}
     */
    waitOrder(orderId: string, o?: {
        intervalMs?: number;
        signal?: AbortSignal;
    }): Promise<Order>;
    /**
     * The room's public state (GET {prefix}/{sale}/room).
     * @param {string} sale @param {{ signal?: AbortSignal }} [o]
     * @returns {Promise<{ sale: string, state: string, starts_at: string, prequeue_from: string, seed_commitment: string, seed?: string, units_left?: number }>}
     */
    room(sale: string, o?: {
        signal?: AbortSignal;
    }): Promise<{
        sale: string;
        state: string;
        starts_at: string;
        prequeue_from: string;
        seed_commitment: string;
        seed?: string;
        units_left?: number;
    }>;
    /**
     * One page of the room's pre-queue in admission order (GET {prefix}/{sale}/room/prequeue),
     * public once the sale has ended, to check against the revealed seed. lane: one lane's
     * pre-queue, in a room with lanes (ranked by the same seed).
     * @param {string} sale @param {{ lane?: string, after?: number|string, limit?: number, signal?: AbortSignal }} [o]
     * @returns {Promise<{ seed: string, lane?: string, entries: string[], total?: number, next?: string }>}
     */
    prequeue(sale: string, o?: {
        lane?: string;
        after?: number | string;
        limit?: number;
        signal?: AbortSignal;
    }): Promise<{
        seed: string;
        lane?: string;
        entries: string[];
        total?: number;
        next?: string;
    }>;
    /**
     * A proof-of-work challenge (GET {prefix}/{sale}/challenge; a draw sale's is the draw's).
     * @param {string} sale @param {{ signal?: AbortSignal }} [o]
     * @returns {Promise<{ challenge: string, difficulty: number, expires_at: string }>}
     */
    challenge(sale: string, o?: {
        signal?: AbortSignal;
    }): Promise<{
        challenge: string;
        difficulty: number;
        expires_at: string;
    }>;
    /**
     * Takes a place in the waiting room (POST {prefix}/{sale}/queue), with the proof of work
     * the room asks for, and the token of its bot challenge when it has one (challengeToken:
     * single use, so entering again needs a new one). Entering again returns the same place.
     * invitation: a code of the sale's invitation lane (X-Seckill-Invitation); refused with
     * invitation_unknown or invitation_exhausted (its cap of uses reached).
     * @param {string} sale
     * @param {{ onProgress?: (p: Progress) => void, signal?: AbortSignal, inline?: boolean, challengeToken?: string, invitation?: string }} [o]
     * @returns {Promise<QueueAnswer>}
     */
    enter(sale: string, o?: {
        onProgress?: (p: Progress) => void;
        signal?: AbortSignal;
        inline?: boolean;
        challengeToken?: string;
        invitation?: string;
    }): Promise<QueueAnswer>;
    /**
     * One poll of the place (GET {prefix}/{sale}/queue with the ticket).
     * @param {string} sale @param {string} ticket @param {{ signal?: AbortSignal }} [o]
     * @returns {Promise<QueueAnswer>}
     */
    poll(sale: string, ticket: string, o?: {
        signal?: AbortSignal;
    }): Promise<QueueAnswer>;
    /**
     * Gives the place up (DELETE {prefix}/{sale}/queue).
     * @param {string} sale @param {string} ticket @param {{ signal?: AbortSignal }} [o]
     * @returns {Promise<QueueAnswer>}
     */
    leave(sale: string, ticket: string, o?: {
        signal?: AbortSignal;
    }): Promise<QueueAnswer>;
    /**
     * Polls the place at the room's refresh_s until the state is no longer waiting or paused,
     * and returns that answer (admitted: buy now; sold_out or ended: the sale is over for this
     * user). A 429 or 503 waits Retry-After, doubled at each repeat up to maxBackoffMs, with
     * jitter, so that refused clients do not all come back in the same second.
     * @param {string} sale
     * @param {QueueAnswer | string} place the entry's answer, or its ticket
     * @param {{ onUpdate?: (a: QueueAnswer) => void, signal?: AbortSignal }} [o]
     * @returns {Promise<QueueAnswer>}
     */
    waitForAdmission(sale: string, place: QueueAnswer | string, o?: {
        onUpdate?: (a: QueueAnswer) => void;
        signal?: AbortSignal;
    }): Promise<QueueAnswer>;
    /**
     * Enters the draw for a variant (POST {prefix}/{sale}/draw), with the proof of work it asks
     * for and the token of its bot challenge when it has one (challengeToken, single use);
     * entering again before the close changes the variant and keeps the entry id.
     * @param {string} sale @param {string} [variant] (absent: the sale's only variant)
     * @param {{ onProgress?: (p: Progress) => void, signal?: AbortSignal, inline?: boolean, challengeToken?: string }} [o]
     * @returns {Promise<{ entry_id: string, state: "entered", variant: string }>}
     */
    enterDraw(sale: string, variant?: string, o?: {
        onProgress?: (p: Progress) => void;
        signal?: AbortSignal;
        inline?: boolean;
        challengeToken?: string;
    }): Promise<{
        entry_id: string;
        state: "entered";
        variant: string;
    }>;
    /**
     * Changes the entry's variant before the close (the same request as enterDraw).
     * @param {string} sale @param {string} variant
     * @param {{ onProgress?: (p: Progress) => void, signal?: AbortSignal, inline?: boolean, challengeToken?: string }} [o]
     */
    changeDraw(sale: string, variant: string, o?: {
        onProgress?: (p: Progress) => void;
        signal?: AbortSignal;
        inline?: boolean;
        challengeToken?: string;
    }): Promise<{
        entry_id: string;
        state: "entered";
        variant: string;
    }>;
    /**
     * Withdraws the entry before the close (DELETE {prefix}/{sale}/draw).
     * @param {string} sale @param {{ signal?: AbortSignal }} [o]
     * @returns {Promise<{ state: "withdrawn" }>}
     */
    withdrawDraw(sale: string, o?: {
        signal?: AbortSignal;
    }): Promise<{
        state: "withdrawn";
    }>;
    /**
     * The user's entry and its fate (GET {prefix}/{sale}/draw): entered, withdrawn, won (with
     * claim_until: buy before it), lost, waiting, claimed, expired.
     * @param {string} sale @param {{ signal?: AbortSignal }} [o]
     * @returns {Promise<{ entry_id: string, state: string, variant: string, rank?: number, wave?: number, claim_until?: string, variants: string[] }>}
     */
    drawStatus(sale: string, o?: {
        signal?: AbortSignal;
    }): Promise<{
        entry_id: string;
        state: string;
        variant: string;
        rank?: number;
        wave?: number;
        claim_until?: string;
        variants: string[];
    }>;
    /**
     * The draw's public result (GET {prefix}/{sale}/draw/result).
     * @param {string} sale @param {{ signal?: AbortSignal }} [o]
     * @returns {Promise<{ state: "open"|"closed"|"drawn"|"done", seed_commitment: string, opens_at?: string, closes_at?: string, entries?: number, entries_root?: string, seed?: string, waves?: Array<{ wave: number, variant: string, at: string, claim_until: string, from: number, to: number, winners: string[] }> }>}
     */
    drawResult(sale: string, o?: {
        signal?: AbortSignal;
    }): Promise<{
        state: "open" | "closed" | "drawn" | "done";
        seed_commitment: string;
        opens_at?: string;
        closes_at?: string;
        entries?: number;
        entries_root?: string;
        seed?: string;
        waves?: Array<{
            wave: number;
            variant: string;
            at: string;
            claim_until: string;
            from: number;
            to: number;
            winners: string[];
        }>;
    }>;
    /**
     * One page of the fixed entries (GET {prefix}/{sale}/draw/entries), after the close.
     * @param {string} sale @param {{ after?: string, limit?: number, signal?: AbortSignal }} [o]
     * @returns {Promise<{ entries: Array<{ entry_id: string, variant: string }>, next?: string }>}
     */
    drawEntries(sale: string, o?: {
        after?: string;
        limit?: number;
        signal?: AbortSignal;
    }): Promise<{
        entries: Array<{
            entry_id: string;
            variant: string;
        }>;
        next?: string;
    }>;
    /**
     * The user's inclusion proof (GET {prefix}/{sale}/draw/proof), after the close.
     * @param {string} sale @param {{ signal?: AbortSignal }} [o]
     * @returns {Promise<{ entry_id: string, variant: string, index: number, leaf: string, path: string[], root: string, proof_version: number, randomness: string, beacon: object|null, rank?: number }>}
     */
    drawProof(sale: string, o?: {
        signal?: AbortSignal;
    }): Promise<{
        entry_id: string;
        variant: string;
        index: number;
        leaf: string;
        path: string[];
        root: string;
        proof_version: number;
        randomness: string;
        beacon: object | null;
        rank?: number;
    }>;
    #private;
}
export type ClientOptions = {
    /**
     * The gateway's origin ("" or absent: the page's own origin). A page
     * on another origin than the gateway needs it, the gateway's `seckill_cors` allow list, and
     * credentials "include" for the shop's session cookie (docs/DESIGN.md, "URL space").
     */
    baseURL?: string | undefined;
    /**
     * The path prefix of the gateway's buyer routes (the seckill app's
     * `prefix`; default "/seckill"): token, buy, room, challenge, queue and draw are under it.
     */
    prefix?: string | undefined;
    /**
     * The path prefix of the order status route (the app's
     * `orders_prefix`; default "/orders").
     */
    ordersPrefix?: string | undefined;
    /**
     * Headers sent with every request (e.g. X-User-ID
     * where the gateway believes it; production gateways read the shop's session cookie instead).
     */
    headers?: Record<string, string> | undefined;
    /**
     * fetch's credentials (default "same-origin", so
     * the shop's session cookie goes along).
     */
    credentials?: RequestCredentials | undefined;
    /**
     * The fetch to use (default globalThis.fetch).
     */
    fetch?: typeof fetch | undefined;
    /**
     * How to wait between
     * polls (default a timer; tests pass their own).
     */
    sleep?: ((ms: number, signal?: AbortSignal) => Promise<void>) | undefined;
    /**
     * The longest wait after repeated 429 / 503 (default 30000).
     */
    maxBackoffMs?: number | undefined;
    /**
     * The device's key (DeviceKey.open()): the token issue, the
     * room's entry, polls and leave, and the purchase then carry a DPoP proof of it, so the token
     * and the ticket are bound to this device (device_binding, docs/DESIGN.md "Device-bound tokens
     * and tickets"). Absent: bearer tokens, until a gateway answers proof_required: the client
     * then opens the device's key (DeviceKey.open()) and asks again once, so a page works with
     * any device_binding unchanged.
     */
    deviceKey?: DeviceKey | undefined;
};
export type Refusal = {
    /**
     * A stable code (docs/openapi.yaml lists them by status).
     */
    code: string;
    message: string;
    /**
     * The existing order (already_bought).
     */
    order_id?: string | undefined;
    /**
     * The variant a sold_out is about.
     */
    variant?: string | undefined;
    /**
     * The units held already (limit_reached).
     */
    held?: number | undefined;
};
export type QueueAnswer = {
    /**
     * Send it back with each poll (an answer may hand out a new one).
     */
    ticket?: string | undefined;
    entry_id?: string | undefined;
    state: "waiting" | "admitted" | "sold_out" | "ended" | "paused" | "left";
    position?: number | undefined;
    ahead?: number | undefined;
    estimated_wait_s?: number | undefined;
    estimated_wait_range_s?: number[] | undefined;
    /**
     * Poll again after this many seconds.
     */
    refresh_s: number;
    admitted_until?: string | undefined;
    units_left?: number | undefined;
};
export type Progress = {
    /**
     * Hashes tried so far.
     */
    tried: number;
    /**
     * Hashes expected on average (2^difficulty).
     */
    expected: number;
    difficulty: number;
    /**
     * The work is finished: the last event of a solve (tried is then
     * the counter found plus one).
     */
    done: boolean;
};
export type Order = {
    order_id: string;
    sale_id: string;
    status: "queued" | "created" | "failed" | "paid" | "cancelled";
    reason?: string | undefined;
    variant?: string | undefined;
    quantity?: number | undefined;
};
