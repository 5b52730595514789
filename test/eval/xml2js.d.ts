/** The part of xml2js (a real XML parser; its package ships no types) the JUnit test reads the XML with. */
declare module 'xml2js' {
  export function parseStringPromise(xml: string, options?: Record<string, unknown>): Promise<unknown>;
}
