export const name = 'expectation checks';

// vcrm_expect(ok, what) fails its transaction with SQLSTATE VC001 unless ok is true. A command that guessed what
// the database holds sends its writes behind such a check in one round trip; VC001 tells it the guess was wrong
// and nothing was written, so it runs again the ordinary way (see captureLead).
export const sql = `
CREATE FUNCTION vcrm_expect(ok boolean, what text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  IF ok IS NOT TRUE THEN
    RAISE EXCEPTION 'expectation failed: %', what USING ERRCODE = 'VC001';
  END IF;
  RETURN true;
END
$$;
`;
