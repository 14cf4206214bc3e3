// Misuses of the generated types that tsc --strict must refuse: the types are the document's,
// not `any`.
import type { components } from "./seckill-api.js";

type SaleSpec = components["schemas"]["SaleSpec"];
type Order = components["schemas"]["Order"];

export const noId: SaleSpec = { starts_at: "2026-12-02T20:00:00Z", ends_at: "2026-12-02T21:00:00Z" };
export const payWithin: SaleSpec = { id: "s", starts_at: "x", ends_at: "y", pay_within: true };
export const status: Order = { order_id: "o", sale_id: "s", status: "shipped" };
