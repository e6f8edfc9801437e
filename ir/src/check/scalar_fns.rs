//! The signatures of the scalar builtins, shared by their applications (`sqrt x`) and their
//! uses as functions (`map sqrt xs`, `reduce max (-inf) xs`).

use super::arity::FLOAT_UNARY;
use super::expr::Checker;
use super::text::{err, plural};
use super::unify::{Class, IT, V};
use crate::ast::Expr;
use crate::error::Result;
use crate::types::ElemType;

/// What the arguments of a scalar builtin must be and what it returns.
enum Sig {
    /// `k` arguments of one type of `class`; the result has their type.
    Same(usize, Class, &'static str),
    /// One argument of `class`; the result is the given type.
    To(Class, &'static str, ElemType),
}

fn sig(name: &str) -> Option<Sig> {
    Some(match name {
        "abs" => Sig::Same(1, Class::Numeric, "numeric"),
        "min" | "max" => Sig::Same(2, Class::Numeric, "numeric"),
        "clamp" => Sig::Same(3, Class::Numeric, "numeric"),
        "pow" | "atan2" => Sig::Same(2, Class::Float, "float"),
        "popcount" | "clz" => Sig::To(Class::Int, "integer", ElemType::I32),
        "isnan" | "isinf" => Sig::To(Class::Float, "float", ElemType::Bool),
        n if FLOAT_UNARY.contains(&n) => Sig::Same(1, Class::Float, "float"),
        n => Sig::To(Class::Any, "scalar", ElemType::from_name(n)?),
    })
}

/// Whether `name` is a scalar builtin that may be passed as a function.
pub(crate) fn is_scalar_fn(name: &str) -> bool {
    sig(name).is_some()
}

impl Checker {
    /// The result of the scalar builtin `name` given arguments `args`, checked at `site`;
    /// `who` names what passes the arguments (for a wrong count).
    pub(crate) fn builtin_as_fn(&mut self, name: &str, args: &[IT], site: &Expr, who: &str) -> Result<IT> {
        let Some(s) = sig(name) else {
            return Err(err(
                site,
                format!(
                    "the builtin `{name}` cannot be passed as a function; only scalar functions such as `sqrt`, \
                     `max` or `f32` can (wrap it in a lambda)"
                ),
            ));
        };
        let k = match s {
            Sig::Same(k, ..) => k,
            Sig::To(..) => 1,
        };
        if args.len() != k {
            return Err(err(
                site,
                format!(
                    "{who} passes {} {} to `{name}`, which takes {k}",
                    args.len(),
                    plural(args.len(), "argument", "arguments")
                ),
            ));
        }
        let mut vs: Vec<V> = Vec::with_capacity(k);
        for a in args {
            match a {
                IT::Scalar(v) => vs.push(*v),
                other => {
                    let t = self.vars.show(other);
                    return Err(err(site, format!("`{name}` takes scalar arguments, found {t}")));
                }
            }
        }
        let (class, what) = match s {
            Sig::Same(_, c, w) | Sig::To(c, w, _) => (c, w),
        };
        for v in &vs {
            self.constrain_at(*v, class, site, |d| format!("`{name}` needs {what} arguments, found {d}"))?;
        }
        let Some(&first) = vs.first() else { return Err(err(site, format!("`{name}` needs an argument"))) };
        match s {
            Sig::Same(..) => {
                for v in vs.iter().skip(1) {
                    self.unify_at(first, *v, site, |a, b| {
                        format!("`{name}` needs arguments of one type, found {a} and {b}")
                    })?;
                }
                Ok(IT::Scalar(first))
            }
            Sig::To(_, _, t) => Ok(IT::Scalar(self.vars.known(t))),
        }
    }
}
