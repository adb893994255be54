/** dashboards/metric-suggestions.ts: the suggestions a widget's comma-separated Metrics field offers as it is typed. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nextMetrics } from '../../console/src/dashboards/metric-suggestions.ts';

const known = ['humidity', 'machine.temp', 'pressure', 'temperature'];

describe('the metrics suggested as a list of them is typed', () => {
  it('when nothing is typed then every known metric is suggested alone', () => {
    assert.deepEqual(nextMetrics('', known), known);
  });

  it('when a metric is being typed then the suggestions are whole names, for the browser to match', () => {
    assert.deepEqual(nextMetrics('temp', known), known);
  });

  it('when the list names metrics then each suggestion is the list so far and one it does not name', () => {
    assert.deepEqual(nextMetrics('temperature, hum', known), [
      'temperature, humidity',
      'temperature, machine.temp',
      'temperature, pressure',
    ]);
  });

  it('when the list is typed without spaces then the suggestions keep what was typed and add one space', () => {
    assert.deepEqual(nextMetrics('temperature,pressure,', known), [
      'temperature,pressure, humidity',
      'temperature,pressure, machine.temp',
    ]);
  });

  it('when every known metric is named then nothing is suggested', () => {
    assert.deepEqual(nextMetrics('humidity, machine.temp, pressure, temperature,', known), []);
  });
});
