// A TypeScript shop's purchase with the types openapi-typescript generates from
// docs/openapi.yaml (written next to this file as seckill-api.ts by
// TestATypeScriptClientGeneratedFromTheDocumentTypeChecks, then checked with tsc --strict).
import type { components, paths } from "./seckill-api.js";

type Refusal = components["schemas"]["Refusal"];
type TokenAnswer = paths["/seckill/{sale}/token"]["post"]["responses"][200]["content"]["application/json"];
type BuyAnswer = paths["/seckill/{sale}/buy"]["post"]["responses"][202]["content"]["application/json"];
type BuyBody = NonNullable<paths["/seckill/{sale}/buy"]["post"]["requestBody"]>["content"]["application/json"];
type Order = paths["/orders/{order_id}"]["get"]["responses"][200]["content"]["application/json"];
type SaleSpec = components["schemas"]["SaleSpec"];

// The set of codes is open: a code of a later release is still a Refusal, and the switch
// needs its default.
export function describe(r: Refusal): string {
  switch (r.code) {
    case "sold_out":
      return "sold out";
    case "already_bought":
      return `bought already: order ${r.order_id ?? "?"}`;
    default:
      return `refused (${r.code}): ${r.message}`;
  }
}
export const later: Refusal = { code: "a_code_of_a_later_release", message: "new" };

// Durations are seconds or Go strings.
export const spec: SaleSpec = {
  id: "spring-drop",
  stock: 100,
  starts_at: "2026-12-02T20:00:00Z",
  ends_at: "2026-12-02T21:00:00Z",
  pay_within: 900,
  room: { session: "2m", prequeue: 900 },
};

async function refusal(res: Response): Promise<Error> {
  return new Error(describe((await res.json()) as Refusal));
}

// buy takes a token, buys one unit and waits until the order is written.
export async function buy(gateway: string, sale: string, user: string): Promise<Order> {
  const headers = { "X-User-ID": user };
  const t = await fetch(`${gateway}/seckill/${encodeURIComponent(sale)}/token`, { method: "POST", headers });
  if (t.status !== 200) throw await refusal(t);
  const token: TokenAnswer = (await t.json()) as TokenAnswer;
  const body: BuyBody = { quantity: 1 };
  const b = await fetch(`${gateway}/seckill/${encodeURIComponent(sale)}/buy`, {
    method: "POST",
    headers: { ...headers, "X-Seckill-Token": token.token, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  if (b.status !== 202) throw await refusal(b);
  const accepted: BuyAnswer = (await b.json()) as BuyAnswer;
  for (;;) {
    const o = await fetch(`${gateway}/orders/${encodeURIComponent(accepted.order_id)}`, { headers });
    if (o.status !== 200) throw await refusal(o);
    const order: Order = (await o.json()) as Order;
    if (order.status !== "queued") return order;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
