// Risk score and anomaly rules of abuse detection, on synthetic indicator lists.
import { describe, expect, it } from 'vitest';
import { anomalies, riskScore, type Indicator } from '../../../../shared/analytics/abuse.js';

const indicator = (
  factor: Indicator['factor'],
  severity: Indicator['severity'],
  category: Indicator['category'] = 'Volume',
): Indicator => ({
  type: 'X',
  category,
  factor,
  severity,
  description: '',
  detected_at: '2026-01-01T00:00:00.000Z',
  metrics: {},
});
const many = (n: number, ...args: Parameters<typeof indicator>) => Array.from({ length: n }, () => indicator(...args));

describe('risk score', () => {
  it('weights factor scores (High 20, Medium 10 each, capped at 100)', () => {
    expect(riskScore([])).toEqual({
      risk_score: 0,
      factor_scores: {
        volume: 0,
        token_consumption: 0,
        error_rate: 0,
        temporal: 0,
        behavioral: 0,
        resource_exhaustion: 0,
      },
    });
    expect(riskScore([indicator('volume', 'High'), indicator('volume', 'Medium')]).factor_scores.volume).toBe(30);
    expect(riskScore(many(8, 'volume', 'High')).factor_scores.volume).toBe(100);
    const all = (
      ['volume', 'token_consumption', 'error_rate', 'temporal', 'behavioral', 'resource_exhaustion'] as const
    ).flatMap((f) => many(5, f, 'High'));
    expect(riskScore(all).risk_score).toBe(100);
  });

  it('raises HighRiskUser at 61 (Critical from 81) and VolumeAnomaly for High volume indicators', () => {
    const at = (score: number) => {
      // volume 100 (25) + token 100 (20) + temporal 100 (15) gives 60; each behavioral Medium adds 1.5.
      const base = [
        ...many(5, 'volume', 'High'),
        ...many(5, 'token_consumption', 'High'),
        ...many(5, 'temporal', 'High', 'Temporal'),
      ];
      return [...base, ...many(Math.round((score - 60) / 1.5), 'behavioral', 'Medium', 'Behavioral')];
    };
    expect(riskScore(at(60)).risk_score).toBe(60);
    expect(anomalies('u', at(60)).map((a) => a.anomaly_type)).toEqual(['VolumeAnomaly']);
    expect(anomalies('u', at(61.5)).map((a) => [a.anomaly_type, a.severity])).toEqual([
      ['HighRiskUser', 'High'],
      ['VolumeAnomaly', 'High'],
    ]);
    const critical = [
      ...at(60),
      ...many(5, 'behavioral', 'High', 'Behavioral'),
      ...many(5, 'error_rate', 'High', 'Behavioral'),
      ...many(1, 'resource_exhaustion', 'Medium', 'Resource'),
    ];
    expect(riskScore(critical).risk_score).toBe(91);
    expect(anomalies('u', critical)[0]).toMatchObject({ anomaly_type: 'HighRiskUser', severity: 'Critical' });
    expect(anomalies('u', [indicator('volume', 'Medium')])).toEqual([]);
  });
});
