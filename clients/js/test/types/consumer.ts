// A shop's TypeScript front end, compiled with --strict against the packed @seckill/client
// (clients/js/types_test.go): every export has types, answers are typed, refusals narrow.
import { Client, DeviceKey, SeckillError, solve } from "@seckill/client";
import type { ClientOptions, Order, Progress, QueueAnswer, Refusal } from "@seckill/client";

const opts: ClientOptions = { baseURL: "https://shop.example", credentials: "include", prefix: "/shop-api/drop", ordersPrefix: "/shop-api/drop/orders" };
const c = new Client(opts);

export async function buyOne(sale: string): Promise<Order | Refusal> {
  const place: QueueAnswer = await c.enter(sale, { onProgress: (p: Progress) => void p.tried });
  const turn = await c.waitForAdmission(sale, place, { onUpdate: (a) => void a.position });
  if (turn.state !== "admitted") return { code: turn.state, message: "not admitted" };
  try {
    const { token, expires_at } = await c.token(sale);
    const accepted = await c.buy(sale, { token, variant: "size-42", quantity: 1 });
    const status: "queued" = accepted.status;
    void [expires_at, status];
    return await c.waitOrder(accepted.order_id, { intervalMs: 500 });
  } catch (e) {
    if (e instanceof SeckillError) {
      const code: string = e.code;
      const retry: number | undefined = e.retryAfter;
      void [code, retry, e.status satisfies number];
      return e.body;
    }
    throw e;
  }
}

export async function device(): Promise<string> {
  const key = await DeviceKey.open("shop");
  return key.thumbprint();
}

export const counter: Promise<string> = solve("challenge", 8, { inline: true });
