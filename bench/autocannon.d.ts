// autocannon ships no type declarations; the benchmarks use a small part of its API.
declare module 'autocannon' {
  namespace autocannon {
    interface Options {
      url: string;
      connections?: number;
      duration?: number;
      amount?: number;
      method?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      pipelining?: number;
    }
    interface Result {
      requests: { average: number; total: number };
      latency: { p50: number; p99: number; average: number };
      errors: number;
      non2xx: number;
    }
  }
  function autocannon(options: autocannon.Options): Promise<autocannon.Result>;
  export default autocannon;
}
