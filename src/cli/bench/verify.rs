//! The run's verdict: every balance equals the sum of the credits answered
//! 200, no answer misjudged a duplicate, and the ledger invariants hold.

use super::measure::PhaseResult;
use super::plan::Ledger;

/// Every balance of the run equals the sum of its accepted credits, every
/// answer said what was expected, and the ledger invariants hold.
pub async fn verify(
    store: &crate::store::Store,
    ledger: &Ledger,
    rows: &[PhaseResult],
) -> Result<(), String> {
    let mut wrong = Vec::new();
    for account in 0..ledger.accounts() {
        let id = ledger.account_id(account);
        let balances = store
            .account_balances(&id)
            .await
            .map_err(|e| e.to_string())?;
        let actual: i64 = balances.iter().map(|b| b.balance_minor).sum();
        let expected = ledger.expected.get(&account).copied().unwrap_or(0);
        if actual != expected {
            wrong.push(format!("{id}: {actual} stored, {expected} sent"));
        }
    }
    let misjudged: u64 = rows.iter().map(|r| r.misjudged).sum();
    let violations = store.check_invariants().await.map_err(|e| e.to_string())?;
    let events = ledger.accepted.len();
    if wrong.is_empty() && misjudged == 0 && violations.is_empty() {
        println!(
            "correct: {} balances equal the sums of {events} credits answered 200; \
             every duplicate was called one; invariants hold",
            ledger.accounts()
        );
        return Ok(());
    }
    for line in wrong.iter().take(10) {
        println!("wrong balance: {line}");
    }
    for violation in &violations {
        println!("invariant violated: {violation:?}");
    }
    Err(format!(
        "incorrect: {} wrong balance(s), {misjudged} answer(s) misjudging a duplicate, {} \
         invariant violation(s)",
        wrong.len(),
        violations.len()
    ))
}
