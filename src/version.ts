/** The server's version, as reported in the OpenAPI document. */
export const VERSION = '0.1.0';
