export function GatewaysPage() {
  return <h1>Gateways</h1>;
}
